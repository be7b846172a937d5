import { DispatchError } from '@dispatch/client'
import { csrfHeader } from '../../api.ts'
import type { AudienceFormat } from './audience-preview.ts'

const MEDIA_TYPES: Record<AudienceFormat, string> = { csv: 'text/csv', ndjson: 'application/x-ndjson' }

/**
 * `PUT …/campaigns/:id/audience` with the file as the body: the browser reads it from disk as it
 * sends (a 100 MB file is never held in the page). XMLHttpRequest rather than the typed client,
 * which has no PUT, and rather than fetch, which cannot tell how much of an upload has gone.
 */
export function uploadAudience(
  campaignId: string,
  file: Blob,
  format: AudienceFormat,
  onProgress: (sent: number, total: number) => void,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest()
    xhr.open('PUT', `/api/third-party/campaigns/${encodeURIComponent(campaignId)}/audience`)
    xhr.setRequestHeader('content-type', MEDIA_TYPES[format])
    for (const [name, value] of Object.entries(csrfHeader())) xhr.setRequestHeader(name, value)
    xhr.upload.onprogress = (event) => onProgress(event.loaded, event.total)
    xhr.onerror = () => reject(new Error('The upload was cut off: the API could not be reached. Try again.'))
    xhr.onload = () => {
      let body: unknown = null
      try {
        body = JSON.parse(xhr.responseText)
      } catch {}
      if (xhr.status >= 200 && xhr.status < 300) return resolve(body)
      const headers = new Headers()
      for (const name of ['retry-after', 'x-request-id']) {
        const value = xhr.getResponseHeader(name)
        if (value) headers.set(name, value)
      }
      reject(DispatchError.fromResponse(new Response(null, { status: xhr.status, headers }), body))
    }
    xhr.send(file)
  })
}
