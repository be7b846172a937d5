import type { Server } from 'node:http'
import type { Duplex } from 'node:stream'
import { type ErrorCode, ErrorCodes } from '@dispatch/contracts'
import type { FastifyInstance } from 'fastify'
import { errorBody } from '../errors.ts'

/** What Node's HTTP parser (llhttp) refuses, in words a client can act on. */
const PARSER_ERRORS: Record<string, { errorCode: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { errorCode: 'HEADERS_TOO_LARGE', message: 'The request headers are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { errorCode: 'REQUEST_TIMEOUT', message: 'The request took too long to arrive' },
  ERR_HTTP_HEADERS_TIMEOUT: {
    errorCode: 'REQUEST_TIMEOUT',
    message: 'The request headers took too long to arrive',
  },
  HPE_INVALID_METHOD: {
    errorCode: 'VALIDATION_ERROR',
    message: 'The request method is not one this server knows',
  },
  HPE_INVALID_CONTENT_LENGTH: {
    errorCode: 'VALIDATION_ERROR',
    message: 'The Content-Length header is invalid',
  },
  HPE_UNEXPECTED_CONTENT_LENGTH: {
    errorCode: 'VALIDATION_ERROR',
    message: 'Content-Length and Transfer-Encoding cannot both be sent',
  },
  HPE_INVALID_TRANSFER_ENCODING: {
    errorCode: 'VALIDATION_ERROR',
    message: 'The Transfer-Encoding header is invalid',
  },
  HPE_INVALID_CHUNK_SIZE: { errorCode: 'VALIDATION_ERROR', message: 'The chunked body is malformed' },
  HPE_INVALID_HEADER_TOKEN: { errorCode: 'VALIDATION_ERROR', message: 'A request header is malformed' },
}
const MALFORMED = { errorCode: 'VALIDATION_ERROR', message: 'The request is malformed' } as const

/** Every method a route of this API answers to, for the `Allow` header of a 405. */
const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'

/** A whole HTTP/1.1 answer with the spec's error body, written straight to a socket; the connection closes. */
function writeError(
  socket: Duplex,
  errorCode: ErrorCode,
  message: string,
  headers: Record<string, string> = {},
) {
  const answer = errorBody(errorCode, ErrorCodes[errorCode], message)
  const body = JSON.stringify(answer)
  const head = [
    `HTTP/1.1 ${answer.statusCode} ${answer.error}`,
    'Content-Type: application/json; charset=utf-8',
    'X-Content-Type-Options: nosniff',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ]
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`)
}

/**
 * Fastify's `clientErrorHandler`: a request Node's parser refused (bad Content-Length, a NUL or other
 * invalid byte in a header, an unknown method, headers over the size limit) never reaches a route.
 * It still gets the spec's error body. Only the parser's code is logged: the raw bytes it carries
 * (`err.rawPacket`) hold the request's headers, keys and tokens included.
 */
export function handleClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Duplex) {
  // A reset connection has no one left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const known = (error.code && PARSER_ERRORS[error.code]) || MALFORMED
  this.log.debug({ clientError: { code: error.code, reason: known.message } }, 'client error')
  if (socket.writable) writeError(socket, known.errorCode, known.message)
  else socket.destroy()
}

/**
 * A `CONNECT` request (a proxy tunnel) goes to the server's `connect` event, not to the router, and
 * without a listener Node just closes the socket: answer it with 405 and the error body instead.
 */
export function refuseConnect(server: Server) {
  server.on('connect', (_request, socket: Duplex) => {
    socket.on('error', () => socket.destroy())
    writeError(socket, 'METHOD_NOT_ALLOWED', 'CONNECT is not supported', { Allow: ALLOWED_METHODS })
  })
}
