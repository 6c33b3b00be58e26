// Error answers of the example server: JSON in the `{ success, code, message }` shape of the 429 body, for every status.
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';

/** An error with the status and message the client is answered with. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

function sendError(res: Response, status: number, message: string): void {
  res.status(status).json({ success: false, code: status, message });
}

/** The answer to a path or method the listing does not serve. */
export const notFound: RequestHandler = (req, res) => {
  sendError(res, 404, `Not found: ${req.method} ${req.path} is not an endpoint of this listing.`);
};

/** What body-parser puts on the errors it passes on. */
interface BodyParserError extends Error {
  readonly type?: string;
  readonly status?: number;
  readonly expose?: boolean;
}

/**
 * Turns every error into a JSON answer: HttpError as given, body-parser's errors with their own status
 * (malformed JSON is a 400 naming the body), anything else a 500 whose cause goes to the access log.
 */
export const errorHandler: ErrorRequestHandler = (error: BodyParserError, _req, res, next) => {
  if (res.headersSent) return next(error);
  if (error instanceof HttpError) return sendError(res, error.status, error.message);
  if (error.type === 'entity.parse.failed') return sendError(res, 400, `body is not valid JSON: ${error.message}`);
  if (error.expose && typeof error.status === 'number' && error.status >= 400 && error.status < 500) {
    return sendError(res, error.status, `body: ${error.message}`);
  }
  res.locals.error = error instanceof Error ? error.message : String(error);
  sendError(res, 500, 'Internal server error.');
};
