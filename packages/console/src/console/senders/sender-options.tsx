import { useQuery } from '@tanstack/preact-query'
import { api, paging } from '../../api.ts'

/** The senders, for a choice in a form (the first 100). */
export function useSenderOptions() {
  const senders = useQuery({
    queryKey: ['senders', 'options'],
    queryFn: () => api.GET('/api/admin/senders', { params: { query: paging(1, 100) } }),
    staleTime: 60_000,
  })
  return senders.data?.data ?? []
}
