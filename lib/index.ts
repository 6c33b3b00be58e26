// The public surface of listing-limits.
export { MAX_DURATION_MS } from './shared/check.js';
export {
  ListingLimitsError,
  type ListingLimitsErrorCode,
  ListingLimitsWarning,
  type ListingLimitsWarningCode,
  RuntimeStateError,
  type RuntimeStateErrorCode,
  type StoreFailureMode,
  StoreUnavailableError,
} from './shared/errors.js';
export type { HeaderSyntax } from './contract/headers.js';
export {
  type AnyListingName,
  type EndpointRow,
  type ListingFamily,
  listingFamilies,
  type ListingName,
  listings,
  type Method,
} from './contract/listings.js';
export { listingLimits } from './limiter/middleware.js';
export { type RedisClient, type RedisFailureMode, type RedisStoreOptions, redisStore } from './stores/redis/store.js';
export {
  type Count,
  type CounterSpec,
  type CountsLimitsAsync,
  type CountsLimitsNow,
  type Limit,
  type LimitsCounter,
  type LimitsSpec,
  type RuntimeState,
  type Store,
  type StoreFailurePolicy,
  type WindowKind,
} from './stores/store.js';
export { MAX_SLIDING_LIMIT } from './stores/limits.js';
export { memoryStore } from './stores/memory/store.js';
export type {
  ActiveBan,
  ActiveGrant,
  Authenticate,
  BanInfo,
  BanOptions,
  ChangeEvent,
  ClientKind,
  EndpointUsage,
  ClientRef,
  ForeignEntry,
  Grant,
  GrantProof,
  GrantRequest,
  GrantRequestInput,
  GrantRequests,
  GrantLookup,
  Grants,
  LimitEvent,
  LimitHandler,
  ListingLimitsMiddleware,
  ListingLimitsOptions,
  LostRecord,
  OnBan,
  RateLimitInfo,
  TrafficMinute,
  TrafficSummary,
} from './limiter/types.js';
