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
  listingNames,
  listings,
  type Method,
} from './contract/listings.js';
export { listingChoices, listingHint, listingOf } from './contract/listing-names.js';
export { listingLimits } from './limiter/middleware.js';
export { type RedisClient, type RedisFailureMode, type RedisStoreOptions, redisStore } from './stores/redis/store.js';
export {
  type Count,
  type CounterSpec,
  type CountsLimitsAsync,
  type CountsLimitsNow,
  type LimitsCounter,
  type LimitsSpec,
  MAX_SLIDING_LIMIT,
  type Store,
  type StoreFailurePolicy,
} from './stores/store.js';
export type { RuntimeState } from './stores/state.js';
export type { Limit, WindowKind } from './contract/limit.js';
export { type MemoryStoreOptions, memoryStore } from './stores/memory/store.js';
export { type ClusterStoreOptions, clusterStore } from './stores/cluster/store.js';
export { clusterPrimary } from './stores/cluster/primary.js';
export type {
  Authenticate,
  BanInfo,
  BanOptions,
  EndpointUsage,
  GrantLookup,
  Grants,
  LimitEvent,
  LimitHandler,
  ListingLimitsMiddleware,
  ListingLimitsOptions,
  OnBan,
  RateLimitInfo,
  TrafficMinute,
  TrafficSummary,
} from './limiter/types.js';
export type { ClientKind } from './contract/keys.js';
export type {
  ActiveBan,
  ActiveGrant,
  ChangeEvent,
  ClientRef,
  ForeignEntry,
  Grant,
  GrantProof,
  GrantRequest,
  GrantRequestInput,
  GrantRequests,
  LostRecord,
} from './records/types.js';
