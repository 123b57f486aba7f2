export {
  isNetworkUnderMaintenance,
  isUnderMaintenance,
  networksUnderMaintenance,
  serversUnderMaintenance,
} from "./windows";
