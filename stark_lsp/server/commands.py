"""The server's command and message names: a stable contract (docs/SERVER.md);
the VS Code extension calls them by these names."""

OPTIMIZE = "stark.optimize"  # uri, kernel
OPTIMIZE_HELPER_USER = "stark.optimizeHelperUser"  # helper uri, user uri, kernel: a helper module's user's search
CONTINUE = "stark.continueSearch"  # uri, kernel, extra attempts
STOP = "stark.stop"  # uri, kernel; no arguments: every search
APPLY_BEST = "stark.applyBest"  # uri, kernel
APPLY_CANDIDATE = "stark.applyCandidate"  # uri, kernel, node id
IMPLEMENT_MARKER = "stark.implementMarker"  # uri, marker id
CREATE_HARNESS = "stark.createHarness"  # uri, kernel
SHOW_HARNESS = "stark.showHarness"  # uri: open the harness where it needs filling in
RENAME_HARNESS = "stark.renameHarness"  # uri: give the harness left under the old name the new one
SET_API_KEY = "stark.setApiKey"  # key
WHY_NOT = "stark.whyNot"  # uri, kernel, reason: shows why "Optimize" cannot run (clients without disabled actions)

TREE_REQUEST = "stark/tree"  # {uri, kernel} -> the tree, without sources
NODE_REQUEST = "stark/node"  # {uri, kernel, id} -> one node's source and its diff against its parent
TREE_CHANGED = "stark/treeChanged"  # sent: {uri, kernel, task_id}
SEARCHES = "stark/searches"  # sent: {searches: [{uri, kernel, task_id, progress, stopping}]}
