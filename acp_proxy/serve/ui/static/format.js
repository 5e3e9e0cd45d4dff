// Numbers and names as the page shows them. Every time carries its unit.

export function duration(ns) {
  if (ns === null || ns === undefined) return "";
  if (ns < 1e6) return (ns / 1e3).toFixed(0) + " µs";
  if (ns < 1e9) { const ms = ns / 1e6; return (ms < 100 ? ms.toFixed(1) : ms.toFixed(0)) + " ms"; }
  return (ns / 1e9).toFixed(2) + " s";
}
export function ms(value) { return value === null || value === undefined ? "" : duration(value * 1e6); }
export function bytes(n) { return n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KB" : (n / 1048576).toFixed(1) + " MB"; }
export function wall(ns) { return ns ? new Date(ns / 1e6).toISOString().replace("T", " ").slice(0, 19) : ""; }
// A time since the connection's first frame.
export function offset(ns) {
  if (ns === null || ns === undefined) return "";
  const s = ns / 1e9;
  return s < 1 ? (ns / 1e6).toFixed(1) + " ms" : s < 6000 ? s.toFixed(3) + " s" : (s / 60).toFixed(1) + " min";
}
// A number with its thousands grouped: number(1234567) is "1,234,567". (Not toLocaleString: its
// first call in a page loads the browser's locale data, a cost every new page paid before its
// first rows were drawn.)
export function number(n) {
  const [whole, fraction] = String(n).split(".");
  return whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",") + (fraction ? "." + fraction : "");
}
// A count and its noun, singular for one: counted(1, "row") is "1 row", counted(3, "row") "3 rows".
export function counted(n, singular, plural = singular + "s") {
  return `${number(n)} ${n === 1 ? singular : plural}`;
}
export const DIR = { c2a: "c→a", a2c: "a→c", stderr: "err" };
export function peer(info, argv) {
  if (info && typeof info === "object") {
    const name = info.title || info.name;
    if (name) return info.version ? name + " " + info.version : String(name);
  }
  return argv && argv.length ? argv.join(" ") : "unnamed";
}
// A latency's colour class: fast, slow, slower.
export function speed(ns) {
  if (ns === null || ns === undefined) return "";
  return ns < 100e6 ? "fast" : ns < 1e9 ? "slow" : "slower";
}
