// The public surface of listing-limits.
export {
  ListingLimitsError,
  type ListingLimitsErrorCode,
  type StoreFailureMode,
  StoreUnavailableError,
} from './errors.js';
export { type EndpointRow, type ListingName, listings, type Method } from './listings.js';
export { listingLimits } from './middleware.js';
export type { LimitHandler, ListingLimitsOptions, RateLimitInfo } from './options.js';
export { type RedisClient, type RedisFailureMode, type RedisStoreOptions, redisStore } from './redis.js';
export { type Endpoint, memoryStore, type Store } from './stores.js';
