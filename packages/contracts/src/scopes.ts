import type { MessageType } from './message-types.ts'

/** Scopes in use. The list is open-ended: any well-formed `verb:noun` may be requested. */
export const Scopes = {
  sendFreeText: 'send:free-text',
  sendTemplate: 'send:template',
  sendImage: 'send:image',
  sendDocument: 'send:document',
  sendVideo: 'send:video',
  sendAudio: 'send:audio',
  sendSticker: 'send:sticker',
  sendLocation: 'send:location',
  sendContacts: 'send:contacts',
  sendInteractive: 'send:interactive',
  sendReaction: 'send:reaction',
  readMessages: 'read:messages',
  readChannels: 'read:channels',
  readProjects: 'read:projects',
  readProducts: 'read:products',
  readOrders: 'read:orders',
  createOrders: 'create:orders',
  readKits: 'read:kits',
  manageWebhooks: 'manage:webhooks',
  manageSuppressions: 'manage:suppressions',
  /** Erasures and exports of a recipient's data, the key's own (issue 25). */
  manageData: 'manage:data',
  /** Campaigns: create, upload, start, pause, cancel, read their recipients (issue 43). */
  manageCampaigns: 'manage:campaigns',
  /** A send's `fallback: { sms }`: the message may go out as an SMS when WhatsApp cannot deliver it (issue 44). */
  sendSmsFallback: 'send:sms-fallback',
} as const

/**
 * `verb:noun`, no wildcard: `send:*` does not exist. A wildcard would grant every scope added
 * later (`send:sms-fallback`…) without an admin deciding it; a key asks for each scope it needs.
 */
export const SCOPE_PATTERN = '^[a-z][a-z0-9-]*:[a-z0-9][a-z0-9-]*$'

/** The scope each message type's send needs, and its cancel. */
export const SEND_SCOPE: Record<MessageType, string> = {
  text: Scopes.sendFreeText,
  template: Scopes.sendTemplate,
  image: Scopes.sendImage,
  document: Scopes.sendDocument,
  video: Scopes.sendVideo,
  audio: Scopes.sendAudio,
  sticker: Scopes.sendSticker,
  location: Scopes.sendLocation,
  contacts: Scopes.sendContacts,
  interactive: Scopes.sendInteractive,
  reaction: Scopes.sendReaction,
}
