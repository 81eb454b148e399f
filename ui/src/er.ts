// The ER diagram's graph from POST /explorer/er: a node per table labelled with its columns (PK
// and FK marked), an edge per foreign key. Tables of other schemas that a foreign key points to
// come as `external` nodes without columns and are drawn dashed.
export interface ErApiDiagram {
  schema: string
  nodes: { id: string; schema: string; name: string; external?: boolean; columns: { name: string; type: string; nullable: boolean; primaryKey: boolean }[] }[]
  edges: { id: string; name: string; from: string; fromColumns: string[]; to: string; toColumns: string[]; onDelete: string; onUpdate: string }[]
}
export interface ErNode { id: string; table: string; label: string; w: number; h: number; external: boolean }
export interface ErEdge { id: string; source: string; target: string; label: string; from: string[]; to: string[] }

const MAX_COLUMNS = 30  // longer tables show the first ones and a count of the rest

export function erGraph(d: ErApiDiagram) {
  const fk = new Map<string, Set<string>>()
  for (const e of d.edges) {
    if (!fk.has(e.from)) fk.set(e.from, new Set())
    for (const c of e.fromColumns) fk.get(e.from)!.add(c)
  }
  const nodes: ErNode[] = d.nodes.map((n) => {
    // PK / FK marks in plain text: the label is drawn on a canvas, where emoji fonts may be missing.
    const fks = fk.get(n.id) ?? new Set<string>()
    const mark = (c: { name: string; primaryKey: boolean }) => (c.primaryKey ? 'PK' : fks.has(c.name) ? 'FK' : '  ')
    const title = n.external ? `${n.schema}.${n.name}` : n.name
    const lines = [title, '─'.repeat(Math.min(32, Math.max(8, title.length)))]
    lines.push(...n.columns.slice(0, MAX_COLUMNS).map((c) => `${mark(c)} ${c.name}  ${c.type.toLowerCase()}`))
    if (n.columns.length > MAX_COLUMNS) lines.push(`   … ${n.columns.length - MAX_COLUMNS} more`)
    if (n.external) lines.push('(other schema)')
    const longest = Math.max(...lines.map((l) => [...l].length))
    return { id: n.id, table: n.name, label: lines.join('\n'), w: Math.max(120, longest * 6.9 + 24), h: lines.length * 15 + 18, external: !!n.external }
  })
  const ids = new Set(nodes.map((n) => n.id))
  const edges: ErEdge[] = d.edges.filter((e) => ids.has(e.from) && ids.has(e.to))
    .map((e) => ({ id: e.id, source: e.from, target: e.to, label: e.fromColumns.join(', '), from: e.fromColumns, to: e.toColumns }))
  return { nodes, edges, tables: nodes.filter((n) => !n.external).length }
}
