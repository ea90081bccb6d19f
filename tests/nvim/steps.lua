-- Runs a list of steps against stark serve from a real Neovim (0.7) and writes
-- what each step saw to $STARK_NVIM_OUT as JSON ({results = {<as> = value},
-- steps = [names done], error = why it stopped}). The steps come as JSON from
-- the file $STARK_NVIM_STEPS (written by tests/test_server_nvim.py); every
-- "wait_*" step fails with what it last saw when its condition does not hold
-- in time. STARK_NVIM_DISABLED_SUPPORT=1 announces codeAction.disabledSupport
-- (Neovim 0.7 does not by itself). Lines and characters are 0-based.
--
--   {op="open", file=path, name=buf}                  edit the file, attach the client
--   {op="insert", buf=, line=, lines={...}}           type lines above `line` (didChange)
--   {op="wait_diags", buf=, has=text | none=true | first_lnum=n | lacks=text, as=}
--   {op="hover", buf=, line=, char=, as=}             the hover's markdown (nil: none)
--   {op="actions", buf=, line=, as=}                  [{title, disabled, command, arguments}]
--   {op="run", buf=, line=, title=prefix, as=}        execute the command of that action
--   {op="wait_end", count=n, as=}                     n $/progress ends: their messages
--   {op="wait_message", has=text, as=}                a window/showMessage containing text
--   {op="write", buf=}                                :write the buffer (didSave)
--   {op="rm", file=path}                              remove the file (no file event: 0.7 sends none)
-- Run: nvim --headless --clean -u NONE -c 'luafile steps.lua'

local env = vim.env
local out = { steps = {}, results = {}, messages = {}, progress = {} }
local client_lib = dofile(debug.getinfo(1, 'S').source:sub(2):match('(.*/)') .. 'client.lua')

local WAIT_MS = tonumber(env.STARK_NVIM_WAIT_S or '120') * 1000
local REQUEST_MS = 60000

local ok, err = pcall(function()
  vim.o.hidden = true -- several buffers open at once
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  if env.STARK_NVIM_DISABLED_SUPPORT == '1' then
    capabilities.textDocument.codeAction.disabledSupport = true
  end
  local id = client_lib.start(out, { capabilities = capabilities })
  local client = vim.lsp.get_client_by_id(id)
  local bufs = {}

  local f = assert(io.open(env.STARK_NVIM_STEPS, 'r'))
  local steps = vim.fn.json_decode(f:read('*a'))
  f:close()

  local function diags(buf)
    local t = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      table.insert(t, { lnum = d.lnum, severity = d.severity, code = d.code or vim.NIL, message = d.message })
    end
    return t
  end
  local function brief(list) -- a big file's diagnostics: the first ones and how many
    local first = {}
    for i = 1, math.min(#list, 5) do first[i] = list[i] end
    return { count = #list, first = first }
  end
  local function wait(ms, cond, what, seen)
    if not vim.wait(ms, cond, 50) then
      error(what .. ' did not come in time; saw: ' .. vim.inspect(seen()))
    end
  end
  local function request(method, params, buf)
    local r, e = client.request_sync(method, params, REQUEST_MS, buf)
    assert(r, method .. ' failed: ' .. tostring(e))
    assert(not r.err, method .. ': ' .. vim.inspect(r.err))
    if r.result == vim.NIL then return nil end
    return r.result
  end
  local function actions(buf, line)
    return request('textDocument/codeAction', {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      range = { start = { line = line, character = 0 }, ['end'] = { line = line, character = 0 } },
      context = { diagnostics = {} },
    }, buf) or {}
  end

  for i, s in ipairs(steps) do
    local name = s.op .. (s.as and (' ' .. s.as) or '') .. ' #' .. i
    local buf = s.buf and bufs[s.buf]
    local value = vim.NIL
    if s.op == 'open' then
      vim.cmd('edit ' .. vim.fn.fnameescape(s.file))
      buf = vim.api.nvim_get_current_buf()
      bufs[s.name] = buf
      vim.lsp.buf_attach_client(buf, id)
      wait(WAIT_MS, function() return client.initialized end, 'initialize', function() return {} end)
    elseif s.op == 'insert' then
      vim.api.nvim_buf_set_lines(buf, s.line, s.line, false, s.lines)
    elseif s.op == 'wait_diags' then
      local cond
      if s.none then
        cond = function() return #vim.diagnostic.get(buf) == 0 end
      elseif s.first_lnum then
        cond = function() local d = vim.diagnostic.get(buf)[1]; return d ~= nil and d.lnum == s.first_lnum end
      elseif s.lacks then
        cond = function()
          for _, d in ipairs(vim.diagnostic.get(buf)) do
            if d.message:find(s.lacks, 1, true) then return false end
          end
          return #vim.diagnostic.get(buf) > 0
        end
      else
        cond = function()
          for _, d in ipairs(vim.diagnostic.get(buf)) do
            if d.message:find(s.has, 1, true) then return true end
          end
          return false
        end
      end
      wait(WAIT_MS, cond, name, function() return brief(diags(buf)) end)
      value = brief(diags(buf))
    elseif s.op == 'hover' then
      local h = request('textDocument/hover', {
        textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = s.line, character = s.char or 0 },
      }, buf)
      value = h and h.contents.value or vim.NIL
    elseif s.op == 'actions' then
      value = {}
      for _, a in ipairs(actions(buf, s.line)) do
        table.insert(value, {
          title = a.title,
          disabled = a.disabled and a.disabled.reason or vim.NIL,
          command = a.command and a.command.command or vim.NIL,
          arguments = a.command and a.command.arguments or vim.NIL,
        })
      end
    elseif s.op == 'run' then
      local chosen
      for _, a in ipairs(actions(buf, s.line)) do
        if not chosen and a.title:sub(1, #s.title) == s.title then chosen = a end
      end
      assert(chosen and chosen.command, 'no action "' .. s.title .. '" to run')
      value = request('workspace/executeCommand', chosen.command, buf)
    elseif s.op == 'wait_end' then
      local function ends()
        local t = {}
        for _, v in ipairs(out.progress) do if v.kind == 'end' then table.insert(t, v.message or '') end end
        return t
      end
      wait(WAIT_MS, function() return #ends() >= (s.count or 1) end, name, ends)
      value = ends()
    elseif s.op == 'wait_message' then
      local function hit()
        for _, m in ipairs(out.messages) do if m:find(s.has, 1, true) then return m end end
      end
      wait(WAIT_MS, function() return hit() ~= nil end, name, function() return out.messages end)
      value = hit()
    elseif s.op == 'write' then
      vim.api.nvim_buf_call(buf, function() vim.cmd('write') end)
    elseif s.op == 'rm' then
      assert(os.remove(s.file))
    else
      error('unknown step ' .. vim.inspect(s))
    end
    if s.as then out.results[s.as] = value end
    table.insert(out.steps, name)
  end
  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 20)
end)
client_lib.finish(out, ok and vim.NIL or tostring(err))
