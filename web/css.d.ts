/** Style sheets are bundled by Bun; importing one has no value. */
declare module "*.css";
