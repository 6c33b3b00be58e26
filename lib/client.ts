// The client's entry point, `listing-limits/client`: calls a listing API paced by the contract's table.
export { listingClient } from './client/listing-client.js';
export type { CallOptions, ListingClient, ListingClientOptions, Params } from './client/options.js';
export type { WaitEvent, WaitReason } from './client/pacing.js';
export { ListingClientError, type ListingClientErrorCode } from './client/errors.js';
export { ListingLimitsError } from './shared/errors.js';
export type { AnyListingName, EndpointRow, ListingFamily, ListingName } from './contract/listings.js';
