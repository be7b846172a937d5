import { waitFor } from '@dispatch/testing'
import type { TestWorld } from '../helpers.ts'

/** Bodies of every new send kind, valid, and what the Cloud API must get for each. */
export const MEDIA_ID = '1037543291543636'

export const KIND_SCOPES = [
  'send:free-text',
  'send:template',
  'send:image',
  'send:document',
  'send:video',
  'send:audio',
  'send:sticker',
  'send:location',
  'send:contacts',
  'send:interactive',
  'send:reaction',
  'read:messages',
]

const card = {
  name: { formatted_name: 'Ana Lima', first_name: 'Ana', last_name: 'Lima' },
  phones: [{ phone: '+55 11 98765-4321', type: 'CELL', wa_id: '5511987654321' }],
  emails: [{ email: 'ana@example.com', type: 'WORK' }],
  org: { company: 'Clínica Boa Vista', title: 'Reception' },
}

const buttons = {
  type: 'button',
  header: { type: 'text', text: 'Your appointment' },
  body: { text: 'Tuesday 10:00 with Dr. Souza. Can you make it?' },
  footer: { text: 'Clínica Boa Vista' },
  action: {
    buttons: [
      { type: 'reply', reply: { id: 'confirm', title: 'Confirm' } },
      { type: 'reply', reply: { id: 'reschedule', title: 'Reschedule' } },
    ],
  },
}

const list = {
  type: 'list',
  body: { text: 'Pick a time' },
  action: {
    button: 'See times',
    sections: [
      { title: 'Tuesday', rows: [{ id: 'tue-10', title: '10:00', description: 'Dr. Souza' }] },
      { title: 'Wednesday', rows: [{ id: 'wed-14', title: '14:00' }] },
    ],
  },
}

/**
 * Each new send endpoint: a valid body (without its recipient), and the object the Cloud API gets
 * under the message's type (Dispatch's `mediaId` becomes the platform's `id`).
 */
export const KINDS = [
  {
    type: 'document',
    body: { document: { mediaId: MEDIA_ID, filename: 'invoice-1042.pdf', caption: 'Your invoice' } },
    platform: { id: MEDIA_ID, filename: 'invoice-1042.pdf', caption: 'Your invoice' },
  },
  {
    type: 'video',
    body: { video: { link: 'https://cdn.example.com/welcome.mp4', caption: 'Welcome' } },
    platform: { link: 'https://cdn.example.com/welcome.mp4', caption: 'Welcome' },
  },
  { type: 'audio', body: { audio: { mediaId: MEDIA_ID } }, platform: { id: MEDIA_ID } },
  {
    type: 'sticker',
    body: { sticker: { link: 'https://cdn.example.com/thanks.webp' } },
    platform: { link: 'https://cdn.example.com/thanks.webp' },
  },
  {
    type: 'location',
    body: {
      location: { latitude: -23.5614, longitude: -46.6559, name: 'Clínica', address: 'Av. Paulista, 1000' },
    },
    platform: { latitude: -23.5614, longitude: -46.6559, name: 'Clínica', address: 'Av. Paulista, 1000' },
  },
  { type: 'contacts', body: { contacts: [card] }, platform: [card] },
  { type: 'interactive', body: { interactive: buttons }, platform: buttons },
  { type: 'interactive', body: { interactive: list }, platform: list },
  {
    type: 'interactive',
    body: {
      interactive: {
        type: 'cta_url',
        header: { type: 'image', image: { mediaId: MEDIA_ID } },
        body: { text: 'Track your order' },
        action: {
          name: 'cta_url',
          parameters: { display_text: 'Track', url: 'https://shop.example.com/t/1042' },
        },
      },
    },
    platform: {
      type: 'cta_url',
      header: { type: 'image', image: { id: MEDIA_ID } },
      body: { text: 'Track your order' },
      action: {
        name: 'cta_url',
        parameters: { display_text: 'Track', url: 'https://shop.example.com/t/1042' },
      },
    },
  },
  {
    type: 'interactive',
    body: {
      interactive: {
        type: 'location_request_message',
        body: { text: 'Where should we pick you up?' },
        action: { name: 'send_location' },
      },
    },
    platform: {
      type: 'location_request_message',
      body: { text: 'Where should we pick you up?' },
      action: { name: 'send_location' },
    },
  },
  // A reaction names the message by a wamid here (passed on as given); by a Dispatch id in
  // send-kinds.test.ts, where the platform gets that message's wamid.
  {
    type: 'reaction',
    body: { reaction: { messageId: 'wamid.HBgLNTUxMTk4NzY1MDAwMRUCABIYFjNFQjA', emoji: '👍' } },
    platform: { message_id: 'wamid.HBgLNTUxMTk4NzY1MDAwMRUCABIYFjNFQjA', emoji: '👍' },
  },
] as const

export const pathOf = (type: string) => `send-${type}`

/**
 * Waits until the worker has recorded the message sent in Postgres (a reply is routed on that
 * record; the status lookup can answer `sent` from the queue a moment before it is written).
 */
export async function untilRecordedSent(world: TestWorld, messageId: string) {
  await waitFor(
    async () => {
      const rows = await world.sql`select 1 from messages where id = ${messageId} and sent_at is not null`
      return rows.length > 0 || undefined
    },
    { what: `message ${messageId} recorded sent` },
  )
}
