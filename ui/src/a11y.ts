// Fixes gaps in Naive UI's (and CodeMirror's) markup that screen readers trip on (and axe-core reports as
// serious or critical): card titles are role="heading" without aria-level, dialogs have no name,
// CodeMirror's scroller is not focusable, the selection
// checkboxes of a data table point aria-labelledby at an element that does not exist, and a
// data table's scrolling body cannot be reached with the keyboard (its regions are named after the
// table's data-grid-label, where it has one, so that two tables on a screen are told apart), nor
// can a virtualised tree's scrolling list. A MutationObserver mends them
// as they appear; everything else is labelled in the components.
function mend(root: ParentNode) {
  for (const el of root.querySelectorAll<HTMLElement>('.n-dialog[role="dialog"]:not([aria-label])')) {
    el.setAttribute('aria-label', el.querySelector('.n-dialog__title')?.textContent?.trim() || 'dialog')
  }
  // CodeMirror's scroller: reachable by Tab like any scrolling region.
  for (const el of root.querySelectorAll<HTMLElement>('.cm-scroller:not([tabindex])')) el.setAttribute('tabindex', '0')
  const scrolling = '.n-data-table-base-table-body > .n-scrollbar-container, .n-data-table-base-table-body .v-vl, .n-data-table-base-table-header'
  for (const el of root.querySelectorAll<HTMLElement>(scrolling)) {
    if (el.hasAttribute('tabindex')) continue
    el.setAttribute('tabindex', '0')
    el.setAttribute('role', 'region')
    const what = el.classList.contains('n-data-table-base-table-header') ? 'table header (scrollable)' : 'table rows (scrollable)'
    const owner = el.closest<HTMLElement>('[data-grid-label]')?.dataset.gridLabel
    el.setAttribute('aria-label', owner ? `${owner}: ${what}` : what)
  }
  // A virtualised tree's scrolling list (the explorer's tree once it is longer than its box): its
  // nodes are not focusable, so the list itself is, named after the tree's nav.
  for (const el of root.querySelectorAll<HTMLElement>('.n-tree > .v-vl:not([tabindex])')) {
    el.setAttribute('tabindex', '0')
    el.setAttribute('role', 'region')
    el.setAttribute('aria-label', `${el.closest('nav[aria-label]')?.getAttribute('aria-label') ?? 'tree'} (scrollable)`)
  }
  for (const el of root.querySelectorAll<HTMLElement>('[role="heading"]:not([aria-level])')) el.setAttribute('aria-level', '2')
  for (const el of root.querySelectorAll<HTMLElement>('[role="checkbox"][aria-labelledby]:not([aria-label])')) {
    const id = el.getAttribute('aria-labelledby')!
    if (document.getElementById(id)?.textContent?.trim()) continue
    const row = el.closest('tr')
    const header = !!el.closest('thead')
    const name = row?.querySelector('td:not(.n-data-table-td--selection)')?.textContent?.trim()
    el.setAttribute('aria-label', header ? 'Select all rows' : name ? `Select ${name}` : 'Select row')
  }
}
export function installA11yFixes(doc: Document = document) {
  let queued = false
  const run = () => { queued = false; mend(doc) }
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(run) } })
    .observe(doc.body, { childList: true, subtree: true })
  run()
}
