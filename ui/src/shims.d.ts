// cytoscape-svg ships no types: it is a Cytoscape extension adding cy.svg(options).
declare module 'cytoscape-svg' {
  const ext: (cy: unknown) => void
  export default ext
}
