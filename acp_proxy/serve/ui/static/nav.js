// Keyboard selection over a list that is whole in the DOM (tables, the conversation, arrows of
// the sequence diagram): a cursor that j/k and the arrows move, marked aria-selected="true".

export function listNav(container, selector) {
  let cursor = -1;
  const items = () => [...container.querySelectorAll(selector)];
  function mark(list) {
    list.forEach((node, i) => node.setAttribute("aria-selected", i === cursor ? "true" : "false"));
  }
  return {
    step(delta) {
      const list = items();
      if (!list.length) return;
      cursor = cursor < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, cursor + delta));
      mark(list);
      list[cursor].scrollIntoView({ block: "nearest" });
    },
    activate() {
      const list = items();
      if (cursor >= 0 && cursor < list.length) list[cursor].dispatchEvent(new MouseEvent("click", { bubbles: true }));
    },
    // after a re-render: the same position stays selected
    refresh() { if (cursor >= 0) mark(items()); },
  };
}
