// The public surface of listing-limits.
export { ListingLimitsError, type ListingLimitsErrorCode } from './errors';
export { type EndpointRow, type ListingName, listings, type Method } from './listings';
export { listingLimits } from './middleware';
export type { LimitHandler, ListingLimitsOptions, RateLimitInfo } from './options';
export { type Endpoint, memoryStore, type Store } from './stores';
