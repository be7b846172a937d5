import type { Db } from './client.ts'
import { channels } from './schema/channels.ts'
import { products } from './schema/products.ts'
import { projects } from './schema/projects.ts'

/** Fixed ids, so seeding twice changes nothing and the docs' curl lines can name them. */
export const DEMO_IDS = {
  researchChannel: '00000000-0000-4000-8000-00000000c001',
  clinicChannel: '00000000-0000-4000-8000-00000000c002',
  gutProject: '00000000-0000-4000-8000-00000000a001',
  clinicProject: '00000000-0000-4000-8000-00000000a002',
  stoolKit: '00000000-0000-4000-8000-00000000b001',
  probiotic: '00000000-0000-4000-8000-00000000b002',
  clinicKit: '00000000-0000-4000-8000-00000000b003',
} as const

const workflow = {
  sampleType: ['STOOL' as const],
  ffq: true,
  reibursement: false,
  report: ['PDF' as const, 'SCORE_TABLE' as const],
  collectionMedium: ['ETHANOL' as const],
}

/** A demo catalog for `tenantId`; returns how many records were new. */
export async function seedDemoCatalog(db: Db, tenantId: string): Promise<number> {
  const newChannels = await db
    .insert(channels)
    .values([
      {
        id: DEMO_IDS.researchChannel,
        name: 'Demo research',
        timeline: 'RESEARCH',
        sendPartnerEmail: true,
        sendBmeEmail: true,
        defaultWorkflowValue: workflow,
      },
      {
        id: DEMO_IDS.clinicChannel,
        name: 'Demo clinic',
        timeline: 'AMD',
        autoGenerateKit: true,
        showAddressSection: true,
      },
    ])
    .onConflictDoNothing()
    .returning({ id: channels.id })
  const newProjects = await db
    .insert(projects)
    .values([
      {
        id: DEMO_IDS.gutProject,
        tenantId,
        channelId: DEMO_IDS.researchChannel,
        name: 'Gut microbiome study',
        workflow,
        collaborator: 'RESEARCH',
        externalEmail: 'partner@demo.dispatch.local',
        organizationName: 'Demo University',
      },
      {
        id: DEMO_IDS.clinicProject,
        tenantId,
        channelId: DEMO_IDS.clinicChannel,
        name: 'Clinic screening',
        collaborator: 'CLINIC',
        externalEmail: 'clinic@demo.dispatch.local',
      },
    ])
    .onConflictDoNothing()
    .returning({ id: projects.id })
  const newProducts = await db
    .insert(products)
    .values([
      {
        id: DEMO_IDS.stoolKit,
        tenantId,
        channelId: DEMO_IDS.researchChannel,
        name: 'Stool collection kit',
        description: 'One stool sample kit with ethanol medium',
        stock: 1000,
        price: 4900,
        productType: 'KIT',
      },
      {
        id: DEMO_IDS.probiotic,
        tenantId,
        channelId: DEMO_IDS.researchChannel,
        name: 'Probiotic, 30 days',
        stock: 500,
        price: 2900,
        productType: 'PROBIOTIC',
      },
      {
        id: DEMO_IDS.clinicKit,
        tenantId,
        channelId: DEMO_IDS.clinicChannel,
        name: 'Clinic kit',
        stock: 1000,
        price: 3900,
        productType: 'KIT',
      },
    ])
    .onConflictDoNothing()
    .returning({ id: products.id })
  return newChannels.length + newProjects.length + newProducts.length
}
