// The public surface of listing-limits.
export { MAX_DURATION_MS } from './check.js';
export {
  ListingLimitsError,
  type ListingLimitsErrorCode,
  RuntimeStateError,
  type RuntimeStateErrorCode,
  type StoreFailureMode,
  StoreUnavailableError,
} from './errors.js';
export type { HeaderSyntax } from './headers.js';
export {
  type EndpointRow,
  type ListingFamily,
  listingFamilies,
  type ListingName,
  listings,
  type Method,
} from './listings.js';
export { listingLimits } from './middleware.js';
export { type RedisClient, type RedisFailureMode, type RedisStoreOptions, redisStore } from './redis.js';
export {
  type Count,
  type CounterSpec,
  type CountsLimitsAsync,
  type CountsLimitsNow,
  type Limit,
  type LimitsCounter,
  type LimitsSpec,
  memoryStore,
  type RuntimeState,
  type Store,
  type StoreFailurePolicy,
  type WindowKind,
} from './stores.js';
export { MAX_SLIDING_LIMIT } from './windows.js';
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
  TrafficSummary,
} from './types.js';
