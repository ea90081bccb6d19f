-- Drives stark serve from a real Neovim (0.7: vim.lsp.start_client and
-- buf_attach_client) and writes what it saw to $STARK_NVIM_OUT as JSON:
-- code action titles, progress (the $/progress values, and what
-- vim.lsp.util.get_progress_messages() showed while it ran), diagnostics,
-- hover, the buffer after "Apply best candidate", the tree from stark/tree
-- and the best node from stark/node. STARK_NVIM_CANCEL=1 cancels the search
-- with window/workDoneProgress/cancel once it shows attempts. STARK_NVIM_ACTIONS_ONLY=1
-- runs the first code action only and records the messages shown.
-- Run: nvim --headless --clean -u NONE -c 'luafile drive.lua'

local env = vim.env
local out = { steps = {}, progress = {}, messages = {} }
local function step(name) table.insert(out.steps, name) end
local client_lib = dofile(debug.getinfo(1, 'S').source:sub(2):match('(.*/)') .. 'client.lua')

local ok, err = pcall(function()
  local id = client_lib.start(out, { on_progress = function(result) out.token = result.token end })
  local client = vim.lsp.get_client_by_id(id)
  vim.cmd('edit ' .. vim.fn.fnameescape(env.STARK_NVIM_FILE))
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(buf, id)
  assert(vim.wait(20000, function() return client.initialized end, 20), 'server did not initialize')
  step('initialized')

  local uri = vim.uri_from_bufnr(buf)
  local line = tonumber(env.STARK_NVIM_LINE)
  local function actions()
    local r = assert(client.request_sync('textDocument/codeAction', {
      textDocument = { uri = uri },
      range = { start = { line = line, character = 0 }, ['end'] = { line = line, character = 0 } },
      context = { diagnostics = {} },
    }, 10000, buf), 'codeAction timed out')
    assert(not r.err, vim.inspect(r.err))
    return r.result or {}
  end
  local function titles(acts)
    local t = {}
    for _, a in ipairs(acts) do table.insert(t, a.title) end
    return t
  end
  local function run(action)
    local r = assert(client.request_sync('workspace/executeCommand', action.command, 20000, buf), 'command timed out')
    assert(not r.err, vim.inspect(r.err))
    return r.result
  end

  local acts = actions()
  out.actions_before = titles(acts)
  out.optimize = run(acts[1])
  step('optimize sent')
  if env.STARK_NVIM_ACTIONS_ONLY == '1' then  -- the first action only, and what the server said
    vim.wait(5000, function() return #out.messages > 0 end, 20)
    client.stop()
    vim.wait(5000, function() return client.is_stopped() end, 20)
    return
  end
  -- what a statusline (or fidget.nvim) shows: Neovim's own record of $/progress, polled while it runs
  out.shown = {}
  local seen = {}
  local cancelled = false
  local ended = vim.wait(tonumber(env.STARK_NVIM_SEARCH_S or "540") * 1000, function()
    for _, m in ipairs(vim.lsp.util.get_progress_messages()) do
      local line = (m.title or '') .. ': ' .. (m.message or '')
      if not seen[line] then seen[line] = true; table.insert(out.shown, line) end
      -- a user (or a plugin's key binding) cancels once attempts show: window/workDoneProgress/cancel
      if env.STARK_NVIM_CANCEL == '1' and not cancelled and (m.message or ''):find('^attempt') then
        cancelled = true
        client.notify('window/workDoneProgress/cancel', { token = out.token })
        step('cancel sent')
      end
    end
    for _, v in ipairs(out.progress) do if v.kind == 'end' then return true end end
    return false
  end, 20)
  assert(ended, 'the search did not end')
  step('search ended')
  -- the diagnostics of the finished search come after its progress end: wait for the one that
  -- counts the same attempts as the end message (none comes when nothing beat the user's kernel)
  local final = ''
  for _, v in ipairs(out.progress) do
    if v.kind == 'end' then final = (v.message or ''):match('^done: (%d+ attempts)') or '' end
    out.final = v.kind == 'end' and v.message or out.final
  end
  vim.wait(10000, function()
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if final ~= '' and d.message:find(final, 1, true) then return true end
    end
    return false
  end, 50)
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out.diagnostics, { lnum = d.lnum, severity = d.severity, message = d.message })
  end
  local h = assert(client.request_sync('textDocument/hover', {
    textDocument = { uri = uri }, position = { line = line + 1, character = 4 },
  }, 10000, buf))
  out.hover = h.result and h.result.contents.value or vim.NIL
  local t = assert(client.request_sync('stark/tree', { uri = uri, kernel = env.STARK_NVIM_KERNEL }, 10000, buf))
  out.tree = t.result
  if t.result and t.result.best ~= nil and t.result.best ~= vim.NIL then
    local nd = assert(client.request_sync('stark/node', { uri = uri, kernel = env.STARK_NVIM_KERNEL, id = t.result.best },
                                          10000, buf))
    out.best_node = nd.result
  end

  acts = actions()
  out.actions_after = titles(acts)
  for _, a in ipairs(acts) do
    if a.title:find('^Apply best candidate') then
      out.apply = run(a)
      step('applied')
    end
  end
  out.buffer = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
  out.modified = vim.bo[buf].modified
  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 20)
end)
client_lib.finish(out, ok and vim.NIL or tostring(err))
