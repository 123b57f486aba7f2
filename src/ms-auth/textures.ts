import type { PlayerTextures } from "../../machines/login-request";

/**
 * The skin and cape claims a client gets when it asks for them (validate and assertions with
 * `textures: true`; the OpenID Provider's userinfo can use the same): the ACTIVE skin's texture
 * URL and model, the ACTIVE cape's URL and name, each null when the player has none or the
 * session predates their recording. One shape everywhere, so a client reads them one way.
 */
export interface TextureClaims {
  skin: { url: string; variant: "CLASSIC" | "SLIM" } | null;
  cape: { url: string; alias: string | null } | null;
}

export function textureClaims(textures: PlayerTextures | null | undefined): TextureClaims {
  return {
    skin: textures?.skin ? { url: textures.skin.url, variant: textures.skin.variant } : null,
    cape: textures?.cape ? { url: textures.cape.url, alias: textures.cape.alias } : null,
  };
}
