/**
 * The server's hover ends with "n more: open the search tree"; in VS Code that
 * becomes a link that opens the tree view. Pure.
 */
export const SHOW_TREE_COMMAND = 'stark.ui.showTree';

export function linkSearchTree(markdown: string): string {
  return markdown.replace(/(\d+) more: open the search tree\./, `$1 more: [open the search tree](command:${SHOW_TREE_COMMAND}).`);
}
