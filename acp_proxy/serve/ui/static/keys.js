// The keyboard: every view can be used without a mouse. Keys typed into a text field are the
// field's own, except Esc (leaves the field) and Ctrl+K.
import { $ } from "./dom.js";
import { openInfo } from "./info.js";
import { openPalette } from "./palette.js";
import { state, setHash } from "./state.js";
import { viewName } from "./router.js";

export const SHORTCUTS = [
  ["j / ↓", "next row"], ["k / ↑", "previous row"], ["PageDown / PageUp", "a screen down / up"],
  ["Enter", "open the selected row"], ["Esc", "close the detail (or a panel)"],
  ["/", "focus the filter"], ["i", "session info"], ["Ctrl+K", "jump to a recording, session, method or frame"],
  ["1 … 6", "recordings, timeline, sequence, conversation, performance, diff"],
  ["Space", "play / pause (timeline)"], ["?", "this list"],
];
const TABS = ["recordings", "timeline", "sequence", "conversation", "performance", "diff"];

function typing(target) {
  return target && (target.tagName === "INPUT" || target.tagName === "SELECT" || target.tagName === "TEXTAREA" || target.isContentEditable);
}
function openDialog() { return document.querySelector("dialog[open]"); }

export function installKeys() {
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
      event.preventDefault();
      const open = openDialog();
      if (open) open.close();
      openPalette();
      return;
    }
    if (openDialog()) return;  // a dialog has the keys (Esc closes it)
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const view = state.view;
    const page = () => Math.max(1, Math.floor(($("#view").clientHeight || 400) / 22) - 2);
    switch (event.key) {
      case "j": case "ArrowDown": if (view && view.step) { view.step(1); event.preventDefault(); } return;
      case "k": case "ArrowUp": if (view && view.step) { view.step(-1); event.preventDefault(); } return;
      case "PageDown": if (view && view.step) { view.step(page()); event.preventDefault(); } return;
      case "PageUp": if (view && view.step) { view.step(-page()); event.preventDefault(); } return;
      case "Enter":
        if (event.target.closest && event.target.closest("a, button, summary")) return;
        if (view && view.activate) { view.activate(); event.preventDefault(); }
        return;
      case "Escape":
        if (!$("#detail").hidden) { setHash({ f: null }); event.preventDefault(); }
        return;
      case "/": {
        event.preventDefault();
        const field = viewName() === "timeline" ? $("#filters").elements.text : document.querySelector("#view [data-filter]");
        if (field) field.focus();
        return;
      }
      case "i": openInfo(); event.preventDefault(); return;
      case "?": $("#help").showModal(); event.preventDefault(); return;
      case " ":
        if (event.target.closest && event.target.closest("button, summary, a")) return;  // its own
        if (view && view.playPause) { view.playPause(); event.preventDefault(); }
        return;
      default:
        if (/^[1-6]$/.test(event.key)) setHash({ view: TABS[Number(event.key) - 1], f: null });
    }
  });
}
