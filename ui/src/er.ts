// The ER diagram's graph from table descriptions (GET /connections/{id}/tables/{schema}/{t}):
// a node per table labelled with its columns, an edge per foreign key between tables of the
// set; foreign keys to tables outside it (another schema) are returned apart, not drawn.
export interface ErTable {
  schema: string; name: string
  columns: { name: string; type: string; sourceType?: string; nullable?: boolean }[]
  primaryKey: string[]
  foreignKeys: { name: string; columns: string[]; refSchema?: string; refTable: string; refColumns: string[] }[]
}
export interface ErNode { id: string; table: string; label: string; w: number; h: number }
export interface ErEdge { id: string; source: string; target: string; label: string; from: string[]; to: string[] }

const MAX_COLUMNS = 30  // longer tables show the first ones and a count of the rest

export function nodeLabel(t: ErTable): string {
  // PK / FK marks in plain text: the label is drawn on a canvas, where emoji fonts may be missing.
  const pk = new Set(t.primaryKey)
  const fk = new Set(t.foreignKeys.flatMap((f) => f.columns))
  const mark = (c: string) => (pk.has(c) ? 'PK' : fk.has(c) ? 'FK' : '  ')
  const lines = t.columns.slice(0, MAX_COLUMNS).map((c) => `${mark(c.name)} ${c.name}  ${(c.sourceType ?? c.type).toLowerCase()}`)
  if (t.columns.length > MAX_COLUMNS) lines.push(`   … ${t.columns.length - MAX_COLUMNS} more`)
  return [t.name, '─'.repeat(Math.min(32, Math.max(8, t.name.length))), ...lines].join('\n')
}

export function erGraph(tables: ErTable[]) {
  const ids = new Set(tables.map((t) => `${t.schema}.${t.name}`))
  const nodes: ErNode[] = tables.map((t) => {
    const label = nodeLabel(t)
    const lines = label.split('\n')
    const longest = Math.max(...lines.map((l) => [...l].length))
    return { id: `${t.schema}.${t.name}`, table: t.name, label, w: Math.max(120, longest * 6.9 + 24), h: lines.length * 15 + 18 }
  })
  const edges: ErEdge[] = []
  const external: ErEdge[] = []
  for (const t of tables) {
    for (const fk of t.foreignKeys) {
      const target = `${fk.refSchema || t.schema}.${fk.refTable}`
      const e = { id: `${t.schema}.${t.name}:${fk.name}`, source: `${t.schema}.${t.name}`, target, label: fk.columns.join(', '), from: fk.columns, to: fk.refColumns }
      ;(ids.has(target) ? edges : external).push(e)
    }
  }
  return { nodes, edges, external }
}
