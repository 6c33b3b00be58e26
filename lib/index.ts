// The public surface of listing-limits.
export type { BanInfo, BanOptions, OnBan } from './bans.js';
export type { Authenticate, ClientKind } from './client.js';
export {
  ListingLimitsError,
  type ListingLimitsErrorCode,
  type StoreFailureMode,
  StoreUnavailableError,
} from './errors.js';
export type { Grant, GrantLookup, Grants } from './grants.js';
export { type EndpointRow, type ListingName, listings, type Method } from './listings.js';
export { type ListingLimitsMiddleware, listingLimits } from './middleware.js';
export type { LimitEvent, LimitHandler, ListingLimitsOptions, RateLimitInfo } from './options.js';
export { type RedisClient, type RedisFailureMode, type RedisStoreOptions, redisStore } from './redis.js';
export { type Endpoint, memoryStore, type Store } from './stores.js';
