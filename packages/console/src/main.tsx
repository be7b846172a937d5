import { QueryClientProvider } from '@tanstack/preact-query'
import { render } from 'preact'
import { queryClient } from './api.ts'
import { mode } from './router.tsx'
import './styles.css'
import { ConsoleApp } from './console/app.tsx'
import { PortalApp } from './portal/app.tsx'

const root = document.getElementById('app')
if (root) {
  render(
    <QueryClientProvider client={queryClient}>
      {mode === 'portal' ? <PortalApp /> : <ConsoleApp />}
    </QueryClientProvider>,
    root,
  )
}
