-- What tests/nvim/drive.lua and tests/nvim/steps.lua share: starting `stark serve` as a Neovim 0.7
-- client (vim.lsp.start_client) with the handlers that record progress and messages into `out`,
-- and writing `out` to $STARK_NVIM_OUT as JSON before quitting.
--   local client = dofile(<this file>)
--   local id = client.start(out, {on_progress = fn, capabilities = caps})
--   client.finish(out, err)
local env = vim.env
local M = {}

function M.start(out, opts)
  opts = opts or {}
  local handlers = {
    ['$/progress'] = function(e, result, ctx, config)
      table.insert(out.progress, result.value)
      if opts.on_progress then opts.on_progress(result) end
      return vim.lsp.handlers['$/progress'](e, result, ctx, config)
    end,
    ['window/showMessage'] = function(_, result)
      table.insert(out.messages, result.message)
    end,
  }
  local cmd = { env.STARK_NVIM_PYTHON, '-m', 'stark_lsp', 'serve' }
  if env.STARK_NVIM_BACKEND ~= '' and env.STARK_NVIM_BACKEND ~= nil then
    table.insert(cmd, '--backend'); table.insert(cmd, env.STARK_NVIM_BACKEND)
  end
  local id = vim.lsp.start_client({
    name = 'stark',
    cmd = cmd,
    root_dir = env.STARK_NVIM_ROOT,
    capabilities = opts.capabilities,
    init_options = { budget = tonumber(env.STARK_NVIM_BUDGET or '3'), concurrency = 1 },
    handlers = handlers,
  })
  assert(id, 'start_client failed')
  return id
end

function M.finish(out, err)
  out.error = err
  local f = io.open(env.STARK_NVIM_OUT, 'w')
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd('qall!')
end

return M
