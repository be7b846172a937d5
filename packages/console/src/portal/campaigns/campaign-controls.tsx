import type { Campaign } from '@dispatch/contracts'
import { useMutation, useQueryClient } from '@tanstack/preact-query'
import { useEffect, useRef, useState } from 'preact/hooks'
import { Outcome } from '../../ui/status.tsx'
import type { CampaignAction, CampaignSource } from './campaign-source.ts'

const DONE: Record<CampaignAction, string> = {
  start: 'Started.',
  pause: 'Paused: no more recipients are fed; those already fed go on.',
  resume: 'Resumed.',
  cancel: 'Canceled: recipients not sent yet will not be.',
}

/** Start, pause, resume or cancel; the answer is the campaign as it now is. */
export function useCampaignAction(source: CampaignSource, id: string) {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (action: CampaignAction) => source.act(id, action),
    onSuccess: (campaign) => {
      client.setQueryData(['campaigns', 'detail', id], campaign)
      void client.invalidateQueries({ queryKey: ['campaigns'] })
    },
  })
}

/** What a campaign's state allows: pause while it runs, resume while paused, cancel until it ends. */
export function CampaignControls({ campaign, source }: { campaign: Campaign; source: CampaignSource }) {
  const act = useCampaignAction(source, campaign.id)
  const [confirming, setConfirming] = useState(false)
  const keep = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    if (confirming) keep.current?.focus()
  }, [confirming])
  const { status } = campaign
  const cancelable = status !== 'completed' && status !== 'canceled'
  return (
    <>
      <div class="row">
        {status === 'running' || status === 'scheduled' ? (
          <button
            type="button"
            class="secondary"
            disabled={act.isPending}
            onClick={() => act.mutate('pause')}
          >
            Pause
          </button>
        ) : null}
        {status === 'paused' ? (
          <button type="button" disabled={act.isPending} onClick={() => act.mutate('resume')}>
            Resume
          </button>
        ) : null}
        {cancelable && !confirming ? (
          <button type="button" class="danger" disabled={act.isPending} onClick={() => setConfirming(true)}>
            Cancel campaign
          </button>
        ) : null}
      </div>
      {cancelable && confirming ? (
        <fieldset class="card">
          <legend>Cancel “{campaign.name}”?</legend>
          <p>Its recipients not sent yet end canceled, and it cannot be started again.</p>
          <div class="row">
            <button
              type="button"
              class="danger"
              disabled={act.isPending}
              onClick={() => {
                act.mutate('cancel')
                setConfirming(false)
              }}
            >
              Yes, cancel the campaign
            </button>
            <button type="button" class="secondary" ref={keep} onClick={() => setConfirming(false)}>
              Keep it
            </button>
          </div>
        </fieldset>
      ) : null}
      <Outcome mutation={act} done={act.variables ? DONE[act.variables] : ''} />
    </>
  )
}
