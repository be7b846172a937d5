import { MESSAGE_CHANNELS, MESSAGE_STATUSES, MESSAGE_TYPES } from '@dispatch/contracts'
import { useRef } from 'preact/hooks'
import { channelName } from '../../ui/channel.ts'
import { isRange, RangePicker } from '../../ui/range-picker.tsx'
import { localInput, type MessageSearch } from './search.ts'

/**
 * The message search's form; `admin` adds the key filter. Its time range is a span back from now
 * (1h, 24h, 7d: searched at once, with the fields as they are) or, for another window, From and Until.
 */
export function MessageSearchForm(props: {
  search: MessageSearch
  admin?: boolean
  onSearch: (form: FormData) => void
}) {
  const { search } = props
  const formRef = useRef<HTMLFormElement>(null)
  const pickRange = (range: string) => {
    const form = formRef.current
    if (!form) return
    // A span replaces a window typed in From and Until.
    for (const name of ['startDate', 'endDate']) {
      const field = form.elements.namedItem(name)
      if (field instanceof HTMLInputElement) field.value = ''
    }
    const data = new FormData(form)
    data.set('range', range)
    props.onSearch(data)
  }
  return (
    <search aria-label="Search messages">
      <form
        ref={formRef}
        class="row"
        onSubmit={(event) => {
          event.preventDefault()
          props.onSearch(new FormData(event.currentTarget))
        }}
      >
        <label>
          Phone
          <input name="phone" type="search" placeholder="+5511987654321" defaultValue={search.phone ?? ''} />
        </label>
        {props.admin ? (
          <label>
            Key id
            <input name="apiKeyId" defaultValue={search.apiKeyId ?? ''} />
          </label>
        ) : null}
        <label>
          Status
          <select name="status">
            <option value="">Any</option>
            {MESSAGE_STATUSES.map((status) => (
              <option key={status} value={status} selected={search.status === status}>
                {status}
              </option>
            ))}
          </select>
        </label>
        <label>
          Type
          <select name="type">
            <option value="">Any</option>
            {MESSAGE_TYPES.map((type) => (
              <option key={type} value={type} selected={search.type === type}>
                {type}
              </option>
            ))}
          </select>
        </label>
        <label>
          Channel
          <select name="channel">
            <option value="">Any</option>
            {MESSAGE_CHANNELS.map((channel) => (
              <option key={channel} value={channel} selected={search.channel === channel}>
                {channelName(channel)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Batch id
          <input name="batchId" defaultValue={search.batchId ?? ''} />
        </label>
        <label>
          Client reference
          <input name="clientReference" defaultValue={search.clientReference ?? ''} />
        </label>
        {props.admin ? (
          <label>
            Error code
            <input name="errorCode" defaultValue={search.errorCode ?? ''} />
          </label>
        ) : null}
        <input type="hidden" name="range" value={search.range ?? ''} />
        <RangePicker
          range={isRange(search.range) ? search.range : undefined}
          onChange={pickRange}
          anyTime={{
            pressed: !search.range && !search.startDate && !search.endDate,
            onClick: () => pickRange(''),
          }}
        />
        <label>
          From
          <input name="startDate" type="datetime-local" defaultValue={localInput(search.startDate)} />
        </label>
        <label>
          Until
          <input name="endDate" type="datetime-local" defaultValue={localInput(search.endDate)} />
        </label>
        <button type="submit">Search</button>
      </form>
    </search>
  )
}
