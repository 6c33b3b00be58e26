// The client's entry point, `listing-limits/client`: calls a listing API paced by the contract's table.
export {
  type CallOptions,
  type EndpointRow,
  ListingClientError,
  type ListingClientErrorCode,
  ListingLimitsError,
  type ListingClient,
  listingClient,
  type ListingClientOptions,
  type ListingFamily,
  type ListingName,
  type Params,
  type WaitEvent,
  type WaitReason,
} from './client/listing-client.js';
