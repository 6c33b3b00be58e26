// The public surface of listing-limits.
export { ListingLimitsError, type ListingLimitsErrorCode } from './errors.js';
export { type EndpointRow, type ListingName, listings, type Method } from './listings.js';
export { listingLimits } from './middleware.js';
export type { LimitHandler, ListingLimitsOptions, RateLimitInfo } from './options.js';
export { type Endpoint, memoryStore, type Store } from './stores.js';
export {
  type EndpointPlan,
  type EndpointReport,
  planVerification,
  type VerifyEvent,
  type VerifyOptions,
  type VerifyPlan,
  type VerifyReport,
  verifyContract,
} from './verify.js';
