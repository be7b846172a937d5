/** How many senders one pool holds at most: the choice reads them all on every new recipient. */
export const SENDER_POOL_MAX_MEMBERS = 50
