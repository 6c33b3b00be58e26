// Listing APIs built on the rate limiters people run, not on this package: express-rate-limit in each header mode,
// @fastify/rate-limit in both of its own, and rate-limiter-flexible with no header at all. Each enforces a table of
// the contract's kind (the contract's numbers typed in, or shortened), counted per Authorization value, else per
// client IP, with path parameters ignored; or that table with one fault, for the verifier to find.
//
// worldApi({ kind, rows, fault? }) resolves to a request listener. kind is one of KINDS; fault is one of
//   { kind: 'limit', endpoint, limit }   that endpoint allows `limit` requests per window instead
//   { kind: 'window', endpoint }         that endpoint's window is twice the table's
//   { kind: 'unlimited', endpoint }      that endpoint has no limit
//   { kind: 'status', status }           requests over a limit are answered `status` (say 503) instead of 429
//   { kind: 'params' }                   each path counts apart: path parameters are not ignored
//   { kind: 'ip' }                       counted per client IP, whatever the Authorization value
//   { kind: 'post-shares-get' }          POST /v1/bots/:id counts on the counter of GET /v1/bots/:id
const http = require('node:http');
const express = require('express');

/** The kinds of API, by the limiter they run and how it writes its fields. */
const KINDS = [
  'express-rate-limit draft-6',
  'express-rate-limit draft-7',
  'express-rate-limit draft-8',
  'express-rate-limit legacy',
  '@fastify/rate-limit',
  '@fastify/rate-limit draft',
  'rate-limiter-flexible, no headers',
];

const nameOf = (row) => `${row.method} ${row.path}`;

/** The key a request counts on: its Authorization value, else its address; or as the fault says. */
function keyOf(fault, ip) {
  if (fault?.kind === 'ip') return (req) => ip(req);
  const key = (req) => req.headers.authorization || ip(req);
  if (fault?.kind === 'params') return (req) => `${key(req)} ${req.url.split('?')[0]}`;
  return key;
}

/**
 * The limit of each row, as the fault leaves it: `{ row, limit, windowMs }`, or none for an unlimited endpoint; the
 * row whose counter another shares, under `shares`.
 */
function limitsOf(rows, fault) {
  return rows.map((row) => {
    const name = nameOf(row);
    const faulty = fault?.endpoint === name;
    if (faulty && fault.kind === 'unlimited') return { row };
    const shares =
      fault?.kind === 'post-shares-get' && name === 'POST /v1/bots/:id'
        ? rows.find((other) => nameOf(other) === 'GET /v1/bots/:id')
        : undefined;
    return {
      row,
      shares,
      limit: faulty && fault.kind === 'limit' ? fault.limit : row.limit,
      windowMs: faulty && fault.kind === 'window' ? 2 * row.windowMs : row.windowMs,
    };
  });
}

const answer = (res) => res.json({ ok: true });

function expressRateLimitApi(mode, rows, fault) {
  const { ipKeyGenerator, rateLimit } = require('express-rate-limit');
  const key = keyOf(fault, (req) => ipKeyGenerator(req.ip));
  const app = express();
  const limiters = new Map();
  for (const { row, shares, limit, windowMs } of limitsOf(rows, fault)) {
    if (limit === undefined) continue;
    limiters.set(
      nameOf(row),
      rateLimit({
        windowMs,
        limit,
        standardHeaders: mode === 'legacy' ? false : mode,
        legacyHeaders: mode === 'legacy',
        keyGenerator: key,
        statusCode: fault?.kind === 'status' ? fault.status : 429,
        // A 429 as the API's clients know it (NOTES.md), whatever the status.
        message: { success: false, code: 429, message: 'You are sending too many requests, please slow down' },
      }),
    );
    if (shares) limiters.set(nameOf(row), limiters.get(nameOf(shares)));
  }
  for (const row of rows) {
    const limiter = limiters.get(nameOf(row));
    const route = [row.path, ...(limiter ? [limiter] : []), (_req, res) => answer(res)];
    app[row.method.toLowerCase()](...route);
  }
  return app;
}

async function fastifyApi(draft, rows, fault) {
  const Fastify = require('fastify');
  let listener;
  const app = Fastify({
    serverFactory: (handler) => {
      listener = handler;
      return http.createServer(handler);
    },
  });
  await app.register(require('@fastify/rate-limit'), {
    global: false,
    enableDraftSpec: draft,
    keyGenerator: keyOf(fault, (req) => req.ip),
    errorResponseBuilder: (_req, context) => ({
      statusCode: fault?.kind === 'status' ? fault.status : context.statusCode,
      error: 'Too Many Requests',
      message: `Rate limit exceeded, retry in ${context.after}`,
    }),
  });
  const hooks = new Map();
  for (const { row, shares, limit, windowMs } of limitsOf(rows, fault)) {
    if (limit === undefined) continue;
    hooks.set(nameOf(row), shares ? hooks.get(nameOf(shares)) : app.rateLimit({ max: limit, timeWindow: windowMs }));
  }
  for (const row of rows) {
    const hook = hooks.get(nameOf(row));
    app.route({
      method: row.method,
      url: row.path,
      ...(hook && { onRequest: hook }),
      handler: async () => ({ ok: true }),
    });
  }
  await app.ready();
  return listener;
}

function headerlessApi(rows, fault) {
  const { RateLimiterMemory, RateLimiterRes } = require('rate-limiter-flexible');
  const key = keyOf(fault, (req) => req.ip);
  const app = express();
  const limiters = new Map();
  for (const { row, shares, limit, windowMs } of limitsOf(rows, fault)) {
    if (limit === undefined) continue;
    const limiter = shares
      ? limiters.get(nameOf(shares))
      : new RateLimiterMemory({ points: limit, duration: windowMs / 1000 });
    limiters.set(nameOf(row), limiter);
  }
  const status = fault?.kind === 'status' ? fault.status : 429;
  for (const row of rows) {
    const limiter = limiters.get(nameOf(row));
    const limit = (req, res, next) => {
      limiter.consume(key(req)).then(
        () => next(),
        (refusal) => {
          if (!(refusal instanceof RateLimiterRes)) return next(refusal);
          res.status(status).json({ success: false, code: 429, message: 'You are sending too many requests' });
        },
      );
    };
    app[row.method.toLowerCase()](row.path, ...(limiter ? [limit] : []), (_req, res) => answer(res));
  }
  return app;
}

/** A request listener for an API of `kind` that enforces `rows`, with `fault` if given. */
async function worldApi({ kind, rows, fault }) {
  switch (kind) {
    case 'express-rate-limit draft-6':
    case 'express-rate-limit draft-7':
    case 'express-rate-limit draft-8':
    case 'express-rate-limit legacy':
      return expressRateLimitApi(kind.split(' ')[1], rows, fault);
    case '@fastify/rate-limit':
    case '@fastify/rate-limit draft':
      return fastifyApi(kind.endsWith('draft'), rows, fault);
    case 'rate-limiter-flexible, no headers':
      return headerlessApi(rows, fault);
    default:
      throw new Error(`unknown kind of API ${JSON.stringify(kind)}; the kinds are ${KINDS.join(', ')}`);
  }
}

module.exports = { KINDS, worldApi };
