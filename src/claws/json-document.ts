/**
 * JSON and JSON5 files, edited through a lossless syntax tree (@croct/json5-parser) so comments,
 * unquoted keys, trailing commas and indentation survive; new entries follow the file's own style.
 */
import { JsonArrayNode, JsonError, JsonObjectNode, JsonParser } from '@croct/json5-parser';
import type { JsonNode, JsonValueNode } from '@croct/json5-parser';
import { findItemIndex, isItemSelector, malformed } from './document.js';
import type { ConfigDocument, DocumentFormat, JsonValue, KeyPath, PathSegment } from './document.js';
import { skipSpaces, splice } from './text-edit.js';
import { TreeDocument } from './tree-document.js';
import type { NodeKind } from './tree-document.js';
import { ClawError } from './types.js';

class JsonDocument extends TreeDocument<JsonValueNode> {
  private text: string;
  private tree: JsonObjectNode;
  private readonly finalNewline: string | undefined;
  private readonly fresh: boolean;
  private readonly strict: boolean;

  /** `fresh`: a new file, written as plain two-space JSON. */
  constructor(text: string, source: string, fresh: boolean) {
    super(source);
    this.text = text;
    this.tree = JsonParser.parse(text, JsonObjectNode);
    this.finalNewline = /\r?\n$/.exec(text)?.[0];
    this.fresh = fresh;
    this.strict = isStrictJson(text);
  }

  override set(path: KeyPath, value: JsonValue): void {
    super.set(path, value);
    this.replaceText(this.tree.toString());
  }

  /** The original's own text is copied back, so a restored value looks exactly as it did. */
  override restore(path: KeyPath, original: ConfigDocument): void {
    const source = original instanceof JsonDocument ? original.nodeAt(path) : undefined;
    const current = this.nodeAt(path);
    if (!(original instanceof JsonDocument) || source === undefined || current === undefined) {
      super.restore(path, original);
      return;
    }
    const text = original.text.slice(source.location.start.index, source.location.end.index);
    this.replaceText(splice(this.text, current.location.start.index, current.location.end.index, text));
  }

  protected root(): JsonValueNode {
    return this.tree;
  }

  protected child(node: JsonValueNode, segment: PathSegment): JsonValueNode | undefined {
    if (isItemSelector(segment)) {
      if (!(node instanceof JsonArrayNode)) return undefined;
      return node.elements[findItemIndex(node.toJSON(), segment)];
    }
    if (!(node instanceof JsonObjectNode) || !node.has(segment)) return undefined;
    const found = node.get(segment);
    return found.toJSON() === null ? undefined : found;
  }

  protected kind(node: JsonValueNode): NodeKind {
    if (node instanceof JsonObjectNode) return 'object';
    return node instanceof JsonArrayNode ? 'array' : 'scalar';
  }

  protected put(container: JsonValueNode, segment: PathSegment, value: JsonValue): void {
    if (container instanceof JsonArrayNode && isItemSelector(segment)) {
      const index = findItemIndex(container.toJSON(), segment);
      if (index >= 0) container.set(index, value);
      else if (segment.first === true) container.unshift(value);
      else container.push(value);
    } else if (container instanceof JsonObjectNode && !isItemSelector(segment)) {
      container.set(segment, value);
    }
  }

  /** Removal is done on the text (the tree was just parsed from it), so the lines around stay as they were. */
  protected remove(container: JsonValueNode, segment: PathSegment): void {
    const members: readonly JsonNode[] =
      container instanceof JsonObjectNode ? container.properties : container instanceof JsonArrayNode ? container.elements : [];
    const index = isItemSelector(segment)
      ? findItemIndex(container.toJSON() as unknown[], segment)
      : (container as JsonObjectNode).properties.findIndex((property) => property.key.toJSON() === segment);
    if (index < 0) return;
    const spans = members.map((member) => ({ start: member.location.start.index, end: member.location.end.index }));
    this.replaceText(removeMember(this.text, spans, index));
  }

  value(): unknown {
    return this.tree.toJSON();
  }

  render(): string {
    if (this.fresh) return `${JSON.stringify(this.tree.toJSON(), null, 2)}\n`;
    if (this.strict && !isStrictJson(this.text)) {
      throw new ClawError('edit_failed', `MetaClaw could not keep ${this.source} plain JSON while editing it, so it left the file unchanged.`, {
        path: this.source,
      });
    }
    return this.text;
  }

  private nodeAt(path: KeyPath): JsonValueNode | undefined {
    let node: JsonValueNode | undefined = this.tree;
    for (const segment of path) node = node === undefined ? undefined : this.child(node, segment);
    return node;
  }

  private replaceText(text: string): void {
    this.text = this.finalNewline !== undefined && !text.endsWith('\n') ? `${text}${this.finalNewline}` : text;
    this.tree = JsonParser.parse(this.text, JsonObjectNode);
  }
}

interface Span {
  start: number;
  end: number;
}

/**
 * The text without member `index` of an object or array. A member on its own line goes with its line
 * (comma and trailing comment included); when it was the last one and had no comma, the comma before
 * it goes too, so strict JSON stays strict. Inline members go with the comma that joins them.
 */
export function removeMember(text: string, members: readonly Span[], index: number): string {
  const member = members[index] as Span;
  const previous = members[index - 1];
  const lineStart = text.lastIndexOf('\n', member.start - 1) + 1;
  const after = scanAfter(text, member.end);
  const ownLine = text.slice(lineStart, member.start).trim() === '' && after.lineEnd !== undefined;
  if (ownLine) {
    const without = splice(text, lineStart, after.lineEnd ?? after.end, '');
    if (after.comma || previous === undefined || index < members.length - 1) return without;
    const comma = scanAfter(without, previous.end);
    return comma.comma ? splice(without, comma.commaAt, comma.commaAt + 1, '') : without;
  }
  if (after.comma) return splice(text, member.start, skipSpaces(text, after.commaAt + 1), '');
  return previous === undefined ? splice(text, member.start, member.end, '') : splice(text, previous.end, member.end, '');
}

/** What follows a member: spaces, maybe a comma, maybe a comment, maybe the end of the line. */
function scanAfter(text: string, end: number): { comma: boolean; commaAt: number; end: number; lineEnd: number | undefined } {
  let position = skipSpaces(text, end);
  const comma = text[position] === ',';
  const commaAt = position;
  if (comma) position = skipSpaces(text, position + 1);
  if (text.startsWith('//', position)) {
    const newline = text.indexOf('\n', position);
    position = newline < 0 ? text.length : newline;
  } else if (text.startsWith('/*', position)) {
    const close = text.indexOf('*/', position + 2);
    if (close >= 0 && !text.slice(position, close).includes('\n')) position = skipSpaces(text, close + 2);
  }
  if (text[position] === '\r') position += 1;
  const lineEnd = position >= text.length ? text.length : text[position] === '\n' ? position + 1 : undefined;
  return { comma, commaAt, end: position, lineEnd };
}

function isStrictJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function parseJson(text: string, source: string, formatName: string): ConfigDocument {
  if (text.trim() === '') throw malformed(formatName, source, 'the file is empty');
  try {
    // A bare "{}" has no style to learn; write it like a new file.
    return new JsonDocument(text, source, text.trim() === '{}');
  } catch (error) {
    if (error instanceof JsonError) throw malformed(formatName, source, error.message.replace(/\.$/, ''), error);
    throw error;
  }
}

function formatNamed(name: string): DocumentFormat {
  return {
    name,
    parse: (text, source) => parseJson(text, source, name),
    create: (source) => new JsonDocument('{}', source, true),
  };
}

/** Plain JSON files (CoPaw, PicoClaw, NemoClaw); JSON5 input is tolerated, JSON output is kept JSON. */
export const jsonFormat = formatNamed('JSON');

/** JSON5 files (OpenClaw): comments, unquoted keys and trailing commas allowed. */
export const json5Format = formatNamed('JSON5');

/** JSON with comments (Qwen Code's settings, opencode's config). */
export const jsoncFormat = formatNamed('JSONC');
