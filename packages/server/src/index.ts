export { ApiError, type ApiErrorType } from './errors.js';
export { isBlockedAddress, type RemoteMediaLimits } from './media.js';
export { CHAT_COMPLETION_SCHEMA } from './request.js';
export { createServer, type ServerOptions, type VlmServer } from './server.js';
