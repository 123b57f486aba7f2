/**
 * How long after a stop the server announced ("Stopping the server", a restart script's line) its
 * going down counts as planned: no incident, no `server.down`. Long enough for a large world to
 * save and for the pinger to notice; a server that starts again (its "Done" line) ends it sooner.
 */
export const PLANNED_STOP_SECONDS = 900;
