import type { OpenAIChatRequest } from '../../types/index.js';
import { isRecord, openAIContentText, parseJson, readArray, readReasoning, readString } from '../../upstream/index.js';

/**
 * An OpenAI chat request as Hugging Face chat templates expect their variables: `messages` with
 * string content (templates call `.startswith` on it), assistant `tool_calls` whose arguments are
 * objects (so the template's `tojson` writes them as the model was trained to, the way vLLM passes
 * them), `tool` messages, and the request's `tools` with their keys in OpenAI's documented order
 * (the template writes them with `tojson`, so the same tools give the same prompt ids whichever
 * client sent them). Anthropic and Responses requests reach here through the proxy's own
 * translation to OpenAI.
 */

export interface TemplateMessage {
  role: string;
  content: string;
  reasoning_content?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: unknown } }>;
  tool_call_id?: string;
  name?: string;
}

export interface TemplateInput {
  messages: TemplateMessage[];
  tools: unknown[] | undefined;
  /** vLLM's `chat_template_kwargs` (e.g. `{"enable_thinking": false}`), passed to the template. */
  kwargs: Record<string, unknown>;
}

export function templateInput(request: OpenAIChatRequest): TemplateInput {
  const messages = readArray(request.messages).filter(isRecord).map(templateMessage);
  const tools = readArray(request.tools).filter(isRecord).map(templateTool);
  const kwargs = isRecord(request['chat_template_kwargs']) ? request['chat_template_kwargs'] : {};
  return { messages, tools: tools.length > 0 ? tools : undefined, kwargs };
}

function templateMessage(message: Record<string, unknown>): TemplateMessage {
  const role = readString(message.role) ?? 'user';
  const result: TemplateMessage = { role: templateRole(role), content: openAIContentText(message.content) };
  if (role === 'assistant') {
    const reasoning = readReasoning(message);
    if (reasoning !== '') result.reasoning_content = reasoning;
    const calls = readArray(message.tool_calls)
      .filter(isRecord)
      .map((call) => {
        const definition = isRecord(call.function) ? call.function : {};
        return {
          id: readString(call.id) ?? '',
          type: 'function' as const,
          function: { name: readString(definition.name) ?? '', arguments: argumentsValue(definition.arguments) },
        };
      });
    if (calls.length > 0) result.tool_calls = calls;
  }
  const toolCallId = readString(message.tool_call_id);
  if (toolCallId !== undefined) result.tool_call_id = toolCallId;
  const name = readString(message.name);
  if (name !== undefined) result.name = name;
  return result;
}

/** `developer` is OpenAI's newer name for system; the legacy `function` result is a tool result. */
function templateRole(role: string): string {
  if (role === 'developer') return 'system';
  if (role === 'function') return 'tool';
  return role;
}

/** JSON object text becomes the object; anything else stays the text it was. */
function argumentsValue(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? {};
  const parsed = parseJson(value);
  return isRecord(parsed) ? parsed : value;
}

/** `{type, function: {name, description, parameters, …rest}}`, whatever order the client wrote them in. */
function templateTool(tool: Record<string, unknown>): Record<string, unknown> {
  if (!isRecord(tool.function)) return tool;
  const { name, description, parameters, ...rest } = tool.function;
  const definition: Record<string, unknown> = { name };
  if (description !== undefined) definition.description = description;
  if (parameters !== undefined) definition.parameters = parameters;
  const { type: _type, function: _function, ...others } = tool;
  return { type: 'function', function: { ...definition, ...rest }, ...others };
}
