/**
 * JSON and JSON5 files, edited through a lossless syntax tree (@croct/json5-parser) so comments,
 * unquoted keys, trailing commas and indentation survive; new entries follow the file's own style.
 */
import { JsonArrayNode, JsonError, JsonObjectNode, JsonParser } from '@croct/json5-parser';
import type { JsonValueNode } from '@croct/json5-parser';
import { findItemIndex, isItemSelector, malformed } from './document.js';
import type { ConfigDocument, DocumentFormat, JsonValue, PathSegment } from './document.js';
import { TreeDocument } from './tree-document.js';
import type { NodeKind } from './tree-document.js';
import { ClawError } from './types.js';

class JsonDocument extends TreeDocument<JsonValueNode> {
  private readonly tree: JsonObjectNode;
  private readonly original: string | undefined;
  private readonly strict: boolean;

  /** `original` undefined: a new file, written as plain two-space JSON. */
  constructor(tree: JsonObjectNode, source: string, original: string | undefined) {
    super(source);
    this.tree = tree;
    this.original = original;
    this.strict = original === undefined || isStrictJson(original);
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
      else container.push(value);
    } else if (container instanceof JsonObjectNode && !isItemSelector(segment)) {
      container.set(segment, value);
    }
  }

  protected remove(container: JsonValueNode, segment: PathSegment): void {
    if (container instanceof JsonArrayNode && isItemSelector(segment)) container.delete(findItemIndex(container.toJSON(), segment));
    else if (container instanceof JsonObjectNode && !isItemSelector(segment)) container.delete(segment);
  }

  value(): unknown {
    return this.tree.toJSON();
  }

  render(): string {
    if (this.original === undefined) return `${JSON.stringify(this.tree.toJSON(), null, 2)}\n`;
    const text = keepFinalNewline(this.original, this.tree.toString());
    if (this.strict && !isStrictJson(text)) {
      throw new ClawError('edit_failed', `MetaClaw could not keep ${this.source} plain JSON while editing it, so it left the file unchanged.`, { path: this.source });
    }
    return text;
  }
}

function isStrictJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function keepFinalNewline(original: string, edited: string): string {
  const ending = /\r?\n$/.exec(original)?.[0];
  if (ending === undefined || edited.endsWith('\n')) return edited;
  return `${edited}${ending}`;
}

function parseJson(text: string, source: string, formatName: string): ConfigDocument {
  if (text.trim() === '') throw malformed(formatName, source, 'the file is empty');
  try {
    return new JsonDocument(JsonParser.parse(text, JsonObjectNode), source, text);
  } catch (error) {
    if (error instanceof JsonError) throw malformed(formatName, source, error.message.replace(/\.$/, ''), error);
    throw error;
  }
}

function formatNamed(name: string): DocumentFormat {
  return {
    name,
    parse: (text, source) => parseJson(text, source, name),
    create: (source) => new JsonDocument(JsonParser.parse('{}', JsonObjectNode), source, undefined),
  };
}

/** Plain JSON files (CoPaw, PicoClaw, NemoClaw); JSON5 input is tolerated, JSON output is kept JSON. */
export const jsonFormat = formatNamed('JSON');

/** JSON5 files (OpenClaw): comments, unquoted keys and trailing commas allowed. */
export const json5Format = formatNamed('JSON5');
