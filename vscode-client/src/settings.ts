/**
 * The `stark` settings section, and what the server receives at start
 * (initializationOptions). Pure: no `vscode` import, so it is unit-tested.
 */

export type LlmKind = 'builtin' | 'openai';
export type Policy = 'stark' | 'sampling' | 'reflexion' | 'greedy';

export interface StarkSettings {
  python: string;
  llm: LlmKind;
  baseUrl: string;
  /** Model for every agent; `models` override it per agent. */
  model: string;
  models: { plan: string; code: string; debug: string };
  budget: number;
  policy: Policy;
  /** Profile (Nsight Compute, on a GPU) the top K correct candidates; 0: off. */
  profileTop: number;
  evaluation: { device: string; workers: number };
  serverCommand: string[];
}

/** Reads one key of the `stark` section, e.g. `get('models.plan')`. */
export type SettingGetter = (key: string) => unknown;

const LLMS: readonly LlmKind[] = ['builtin', 'openai'];
const POLICIES: readonly Policy[] = ['stark', 'sampling', 'reflexion', 'greedy'];

function str(v: unknown): string {
  return typeof v === 'string' ? v.trim() : '';
}

function positiveInt(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : fallback;
}

function nonNegativeInt(v: unknown, fallback: number): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : fallback;
}

function oneOf<T extends string>(v: unknown, allowed: readonly T[], fallback: T): T {
  return typeof v === 'string' && (allowed as readonly string[]).includes(v) ? (v as T) : fallback;
}

export function readSettings(get: SettingGetter): StarkSettings {
  const cmd = get('server.command');
  return {
    python: str(get('python')),
    llm: oneOf(get('llm'), LLMS, 'builtin'),
    baseUrl: str(get('baseUrl')),
    model: str(get('model')),
    models: { plan: str(get('models.plan')), code: str(get('models.code')), debug: str(get('models.debug')) },
    budget: positiveInt(get('budget'), 30),
    policy: oneOf(get('policy'), POLICIES, 'stark'),
    profileTop: nonNegativeInt(get('profileTop'), 0),
    evaluation: { device: str(get('evaluation.device')), workers: positiveInt(get('evaluation.workers'), 1) },
    serverCommand: Array.isArray(cmd) ? cmd.filter((a): a is string => typeof a === 'string' && a.length > 0) : [],
  };
}

/**
 * What goes into `initializationOptions`. Empty strings are left out so the
 * server applies its own defaults; the API key is only included when set and
 * never comes from settings (it lives in SecretStorage).
 */
export function toInitializationOptions(s: StarkSettings, apiKey?: string): Record<string, unknown> {
  const models: Record<string, string> = {};
  for (const [k, v] of Object.entries(s.models)) if (v) models[k] = v;
  const evaluation: Record<string, unknown> = { workers: s.evaluation.workers };
  if (s.evaluation.device) evaluation.device = s.evaluation.device;
  const opts: Record<string, unknown> = {
    llm: s.llm,
    budget: s.budget,
    policy: s.policy,
    profileTop: s.profileTop,
    evaluation,
  };
  if (s.baseUrl) opts.baseUrl = s.baseUrl;
  if (s.model) opts.model = s.model;
  if (Object.keys(models).length) opts.models = models;
  if (apiKey) opts.apiKey = apiKey;
  return opts;
}

/** Settings whose change needs a new server process rather than didChangeConfiguration. */
export const RESTART_KEYS = ['stark.python', 'stark.server.command'] as const;
