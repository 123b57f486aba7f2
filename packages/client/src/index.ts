export {
  AssertionError,
  type AssertionErrorCode,
  type AssertionOptions,
  type VerifiedSession,
  verifySessionAssertion,
} from "./assertion";
export { type ErrorCode, type ErrorEnvelope, PlatformError } from "./errors";
export type { components, operations, paths } from "./generated/openapi";
export type { AppRouter, AppRouterRecord, ErrorShape } from "./generated/router";
export {
  createLauncherBackend,
  DENIAL_CODES,
  type DeviceCode,
  type DeviceSignInOptions,
  type DenialCode,
  isDenialCode,
  type LauncherBackend,
  type LauncherBackendOptions,
  LoginDeniedError,
  LoginExpiredError,
  type LoginStatus,
  type PlayerSession,
  type PollResponse,
  type SignInOptions,
  type StartResponse,
  type ValidateResponse,
} from "./launcher";
export { createRestClient, type PlatformRestClient, type RestClientOptions } from "./rest";
export {
  ANALYTICS_CLOSE,
  ANALYTICS_MESSAGE_TYPES,
  type AnalyticsEvents,
  type AnalyticsMessage,
  type AnalyticsMessageOf,
  type AnalyticsMessageType,
  AnalyticsSocket,
  type AnalyticsSocketOptions,
  connectAnalytics,
  type MinMaxAvg,
  type PlayerRef,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./socket";
export {
  type CallContext,
  type Credential,
  createTrpcClient,
  type PlatformTrpcClient,
  type Selectors,
  selectors,
  type TrpcClientOptions,
} from "./trpc";
