/**
 * What the error codes an admin meets on a message mean, and what to do: the platform's (Meta's
 * Cloud API) and Dispatch's own. The console's overview shows them beside the last hour's counts.
 * A code missing here is shown bare; add it when it is met.
 */
export const ERROR_MEANINGS: Readonly<Record<string, string>> = {
  '100': 'Invalid parameter: the platform refused the request as built. Check the message body.',
  '190':
    'The sender’s access token expired or is invalid. The sender is paused until an admin sets a new token.',
  '130429': 'The number’s throughput limit: its queue pauses and retries; no attempt is spent.',
  '131000': 'Something went wrong at the platform. Retried.',
  '131005': 'Access denied: the app lacks permission for this number.',
  '131008': 'A required parameter is missing.',
  '131009': 'A parameter value is not valid.',
  '131016': 'The platform is overloaded. Retried.',
  '131021': 'Sender and recipient are the same number.',
  '131026': 'Undeliverable: not a WhatsApp user, an old app, or terms not accepted. Permanent.',
  '131031': 'The business account is locked or restricted.',
  '131047': 'Outside the 24-hour window: only a template may be sent until the customer writes.',
  '131048': 'Spam rate limit: the number’s quality is low. Slow down and review content.',
  '131049': 'Meta chose not to deliver (per-user marketing limit). Permanent for now.',
  '131050': 'The customer stopped marketing messages from this business.',
  '131051': 'Unsupported message type.',
  '131052': 'The customer’s media could not be downloaded.',
  '131053': 'The media could not be uploaded or is of a wrong type or size.',
  '131056': 'Too many messages to the same customer too fast: only that message waits.',
  '131057': 'The account is under maintenance (a throughput upgrade). Retried.',
  '131062': 'A username (BSUID) recipient is not supported for this message: send to the phone.',
  '132000': 'The template’s parameter count does not match the send.',
  '132001': 'The template does not exist in that language (or is not approved).',
  '132005': 'The template’s translated text is too long.',
  '132007': 'The template’s content breaks WhatsApp policy.',
  '132012': 'A template parameter has the wrong format.',
  '132015': 'The template is paused for low quality.',
  '132016': 'The template is disabled.',
  '133010': 'The phone number is not registered on the Cloud API.',
  MESSAGE_EXPIRED: 'Not handed to the platform within its validity: never sent.',
  RECIPIENT_OPTED_OUT: 'The recipient opted out (STOP) after the message was accepted: canceled, never sent.',
  KEY_REVOKED: 'Its API key was revoked before it went: canceled, never sent.',
}

export const errorMeaning = (code: string): string | null => ERROR_MEANINGS[code] ?? null

/**
 * A code's meaning in a few words, where a table has room for no more: its meaning up to the first
 * colon or full stop (`131026`: "Undeliverable"). Read from the meanings above, never kept apart.
 */
export function errorTitle(code: string): string | null {
  const meaning = errorMeaning(code)
  return meaning === null ? null : (meaning.split(/:\s|\.(?:\s|$)/)[0] ?? meaning).trim()
}
