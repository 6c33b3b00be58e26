// listingClient(): calls a listing API paced by the contract's table, so that the server never has to refuse it.
import { ListingClientError } from './errors.js';
import { compileEndpoints, type Endpoint, endpointOf, jsonOf, urlOf } from './endpoints.js';
import { Gets } from './gets.js';
import {
  type CallOptions,
  type ListingClient,
  type ListingClientOptions,
  type Params,
  resolveClient,
} from './options.js';
import { Reports } from './reports.js';
import { Sender } from './sender.js';

/** A client that paces every call by the table; an option that cannot work throws a `ListingLimitsError`. */
export function listingClient(options: ListingClientOptions): ListingClient {
  const settings = resolveClient(options);
  const endpoints = compileEndpoints(settings);
  const sender = new Sender(settings, endpoints);
  const gets = new Gets(sender);
  let closed = false;
  const reports = new Reports(sender, settings, () => closed);

  const target = (method: string, shape: string, params: unknown): { endpoint: Endpoint; url: string } => {
    const endpoint = endpointOf(endpoints, method, shape);
    if (closed) throw new ListingClientError('ERR_CLOSED', endpoint.name, 'the client is closed.');
    return { endpoint, url: urlOf(settings.baseUrl, endpoint, params) };
  };

  async function get(shape: string, params?: Params, callOptions?: CallOptions): Promise<unknown> {
    const { endpoint, url } = target('GET', shape, params);
    return gets.get(endpoint, url, callOptions?.signal);
  }

  async function post(shape: string, params: Params, body: unknown, callOptions?: CallOptions): Promise<unknown> {
    const { endpoint, url } = target('POST', shape, params);
    const json = jsonOf(endpoint, body);
    return sender.call(endpoint, url, () => json, callOptions?.signal);
  }

  function report(shape: string, params: Params, body: unknown): void {
    const { endpoint, url } = target('POST', shape, params);
    reports.add(endpoint, url, jsonOf(endpoint, body));
  }

  async function close(): Promise<void> {
    closed = true;
    reports.flushAll();
    await sender.settled();
  }

  return { get: get as ListingClient['get'], post: post as ListingClient['post'], report, close };
}
