// The virtual list behind the timeline: rows fetched by page from the server's row index, runs
// of chunks that can be expanded into their frames, and the rows on screen as the only rows in
// the DOM, so a million frames scroll without being loaded.
//
// Positions: a row's "index" is its place in the server's index; a "visual" position counts the
// frames of expanded runs too. Only the rows on screen are ever looked up.

export const ROW_H = 22;
export const PAGE = 100;

export class RunRows {
  constructor() {
    this.pages = new Map();      // page number -> rows (sparse array by index in page)
    this.loading = new Set();
    this.expanded = new Map();   // row index -> {row, subs: Map(sub -> frame), loading: Set}
    this.total = 0;
  }
  visualTotal() { let n = this.total; for (const e of this.expanded.values()) n += e.row.count; return n; }
  // The row (and frame of an expanded run) at a visual position.
  locate(v) {
    let extra = 0;
    for (const r of [...this.expanded.keys()].sort((a, b) => a - b)) {
      const at = r + extra;
      if (v < at) return { row: v - extra };
      if (v === at) return { row: r };
      const count = this.expanded.get(r).row.count;
      if (v <= at + count) return { row: r, sub: v - at - 1 };
      extra += count;
    }
    return { row: v - extra };
  }
  visualOf(row) {
    let extra = 0;
    for (const [r, e] of this.expanded) if (r < row) extra += e.row.count;
    return row + extra;
  }
  rowAt(index) {
    const page = this.pages.get(Math.floor(index / PAGE));
    return page ? page[index % PAGE] : undefined;
  }
  store(number, rows) {
    const list = [];
    for (const row of rows) list[row.index - number * PAGE] = row;
    this.pages.set(number, list);
  }
  // A new total: the last page known may have grown (a run, or new rows), so it is read again.
  setTotal(total) {
    const before = this.total;
    this.total = total;
    if (total !== before) {
      const last = Math.floor(Math.max(0, before - 1) / PAGE);
      for (const n of this.pages.keys()) if (n >= last) this.pages.delete(n);
    }
  }
  toggle(index, row) {
    if (this.expanded.has(index)) this.expanded.delete(index);
    else this.expanded.set(index, { row, subs: new Map(), loading: new Set() });
  }
}

// The visual positions to draw for a scroller (a few rows beyond each edge).
export function windowOf(scroller, count) {
  const top = Math.max(0, Math.floor(scroller.scrollTop / ROW_H) - 5);
  const shown = Math.ceil(scroller.clientHeight / ROW_H) + 10;
  return [top, Math.min(count, top + shown)];
}

// Scroll so that visual position v is on screen (not moving when it already is).
export function reveal(scroller, v) {
  const y = v * ROW_H;
  if (y < scroller.scrollTop) scroller.scrollTop = y;
  else if (y + ROW_H > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = y + ROW_H - scroller.clientHeight;
}
