import type { CreateCampaignBody, TemplateView } from '@dispatch/contracts'
import { useMutation, useQuery, useQueryClient } from '@tanstack/preact-query'
import { useState } from 'preact/hooks'
import { api } from '../../api.ts'
import { navigate } from '../../router.tsx'
import { instant, text } from '../../ui/format.ts'
import { Page } from '../../ui/page.tsx'
import { Loaded, Outcome } from '../../ui/status.tsx'
import { templateChoices } from '../../ui/template-choices.ts'
import { bodyText } from './audience-preview.ts'

/** The header and button variables a template takes, the same for every recipient, from the form. */
function fixedVariables(template: TemplateView, form: FormData): Partial<CreateCampaignBody['template']> {
  const { header, buttons } = template.variables
  const fixed: Partial<CreateCampaignBody['template']> = {}
  if (header?.type === 'text') {
    fixed.headerVariables = [{ type: 'text', value: text(form, 'header') ?? '', originalMediaId: '-' }]
  } else if (header && header.type !== 'location') {
    fixed.headerVariables = [{ type: header.type, value: null, originalMediaId: text(form, 'header') ?? '' }]
  }
  if (buttons.length > 0) {
    fixed.buttonVariables = buttons.map((button) => ({
      buttonIndex: button.index,
      type: 'URL',
      text: text(form, `button-${button.index}`) ?? '',
    }))
  }
  return fixed
}

/** The fields a template needs besides its rows: its header's value, its URL buttons' suffixes. */
function TemplateFields({ template }: { template: TemplateView }) {
  const { header, buttons, body } = template.variables
  return (
    <>
      <p class="notice">
        {bodyText(template.components) ?? 'This template has no body text.'}
        <br />
        <span class="muted">
          {body.length > 0
            ? `Each row of the audience gives: ${body.join(', ')}.`
            : 'Its body takes no variable: each row gives only its recipient.'}
        </span>
      </p>
      {header?.type === 'text' ? (
        <label>
          Header text (the same for everyone)
          <input name="header" required maxLength={1024} />
        </label>
      ) : header && header.type !== 'location' ? (
        <label>
          Header {header.type}: media id (from POST /api/third-party/media)
          <input name="header" required maxLength={256} autocomplete="off" />
        </label>
      ) : null}
      {buttons.map((button) => (
        <label key={button.index}>
          Button {button.index + 1}: the end of its URL (the same for everyone)
          <input name={`button-${button.index}`} required maxLength={2000} autocomplete="off" />
        </label>
      ))}
    </>
  )
}

/**
 * A campaign's first step: its name and an approved template of the key's sender. Created as a
 * draft, it opens on its own page, where its audience is uploaded, previewed and started.
 */
export function CampaignNew() {
  const client = useQueryClient()
  const [chosen, setChosen] = useState<number>(-1)
  const templates = useQuery({
    queryKey: ['templates', 'approved'],
    queryFn: () =>
      api.GET('/api/third-party/templates', {
        params: { query: { page: 1, take: 1000, order: 'ASC', orderField: 'name', status: 'APPROVED' } },
      }),
  })
  const create = useMutation({
    mutationFn: ({ template, form }: { template: TemplateView; form: FormData }) => {
      const startAt = instant(form, 'startAt')
      return api.POST('/api/third-party/campaigns', {
        body: {
          name: text(form, 'name') ?? '',
          template: {
            templateId: template.name,
            language: template.language,
            ...fixedVariables(template, form),
          },
          ...(startAt ? { startAt } : {}),
        },
      })
    },
    onSuccess: (campaign) => {
      void client.invalidateQueries({ queryKey: ['campaigns'] })
      navigate(`/campaigns/${campaign.id}`)
    },
  })
  return (
    <Page title="New campaign">
      <Loaded query={templates}>
        {({ data }) => {
          const choices = templateChoices(data)
          const template = choices[chosen]?.template
          return data.length === 0 ? (
            <p class="muted">
              Your sender has no approved template yet: a campaign sends one. Ask your Dispatch admin to sync
              its templates.
            </p>
          ) : (
            <form
              class="stack narrow"
              aria-label="New campaign"
              onSubmit={(event) => {
                event.preventDefault()
                if (template) create.mutate({ template, form: new FormData(event.currentTarget) })
              }}
            >
              <label>
                Name
                <input name="name" required maxLength={200} autocomplete="off" />
              </label>
              <label>
                Template
                <select
                  name="template"
                  required
                  value={chosen < 0 ? '' : String(chosen)}
                  onChange={(event) => setChosen(Number(event.currentTarget.value))}
                >
                  <option value="" disabled>
                    Choose an approved template
                  </option>
                  {choices.map(({ template: t, label }, index) => (
                    <option key={`${t.name} ${t.language}`} value={String(index)}>
                      {label}
                    </option>
                  ))}
                </select>
              </label>
              {template ? <TemplateFields template={template} /> : null}
              <label>
                Start at (optional; empty: when you start it)
                <input name="startAt" type="datetime-local" />
              </label>
              <button type="submit" disabled={!template || create.isPending}>
                Create, then upload the audience
              </button>
              <Outcome mutation={create} />
            </form>
          )
        }}
      </Loaded>
    </Page>
  )
}
