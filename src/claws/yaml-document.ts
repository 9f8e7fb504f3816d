/**
 * YAML files (Hermes), edited through the `yaml` package's Document API, which keeps comments.
 * The text stays the source of truth: a scalar replaced by a scalar is spliced into the text (quote
 * style and the gap before its comment kept); structural edits go through the Document API, after
 * which every untouched line gets its original spacing back.
 */
import { isAlias, isMap, isScalar, isSeq, parseDocument, Scalar } from 'yaml';
import type { Document, ToStringOptions } from 'yaml';
import { findItemIndex, isItemSelector, isPlainObject, malformed } from './document.js';
import type { ConfigDocument, DocumentFormat, JsonValue, KeyPath, PathSegment } from './document.js';
import { lineEndingOf, splice } from './text-edit.js';
import { TreeDocument } from './tree-document.js';
import type { NodeKind } from './tree-document.js';
import { ClawError } from './types.js';

class YamlDocument extends TreeDocument<unknown> {
  private text: string;
  private document: Document;

  constructor(text: string, document: Document, source: string) {
    super(source);
    this.text = text;
    this.document = document;
  }

  /** A value put back keeps the comment it had on its line (the Document API drops it with the node). */
  override restore(path: KeyPath, original: ConfigDocument): void {
    super.restore(path, original);
    if (!(original instanceof YamlDocument)) return;
    const source = original.nodeAt(path);
    const restored = this.nodeAt(path);
    if (!isScalar(source) || !isScalar(restored) || source.comment === undefined || restored.comment !== undefined) return;
    restored.comment = source.comment;
    // The original's lines are a second source of spacing, so `foo  # note` keeps its gap.
    this.replaceText(this.serialized(`${this.text}\n${original.text}`));
  }

  private nodeAt(path: KeyPath): unknown {
    let node = this.root(false);
    for (const segment of path) node = node === undefined ? undefined : this.child(node, segment);
    return node;
  }

  protected root(create: boolean): unknown {
    if (this.document.contents === null && create) this.document.contents = this.document.createNode({});
    return this.document.contents ?? undefined;
  }

  protected child(node: unknown, segment: PathSegment): unknown {
    let found: unknown;
    if (isItemSelector(segment)) {
      if (isSeq(node)) found = node.items[findItemIndex(node.toJSON(), segment)];
    } else if (isMap(node)) {
      found = node.get(segment, true);
    }
    if (found === null || (isScalar(found) && found.value === null)) return undefined;
    return found;
  }

  protected kind(node: unknown): NodeKind {
    if (isAlias(node)) return 'alias';
    if (isMap(node)) return 'object';
    return isSeq(node) ? 'array' : 'scalar';
  }

  protected put(container: unknown, segment: PathSegment, value: JsonValue): void {
    if (isSeq(container) && isItemSelector(segment)) {
      const index = findItemIndex(container.toJSON(), segment);
      if (index >= 0) container.set(index, this.document.createNode(value));
      else if (segment.first === true) container.items.unshift(this.document.createNode(value));
      else container.add(this.document.createNode(value));
    } else if (isMap(container) && !isItemSelector(segment)) {
      const previous = container.get(segment, true);
      const spliced = typeof value === 'string' && isScalar(previous) ? scalarSource(previous, value, this.text) : undefined;
      if (spliced !== undefined && previous instanceof Scalar && previous.range) {
        this.replaceText(splice(this.text, previous.range[0], previous.range[1], spliced));
        return;
      }
      container.set(segment, this.document.createNode(value));
    }
    this.replaceText(this.serialized());
  }

  protected remove(container: unknown, segment: PathSegment): void {
    if (isSeq(container) && isItemSelector(segment)) container.delete(findItemIndex(container.toJSON(), segment));
    else if (isMap(container) && !isItemSelector(segment)) container.delete(segment);
    // An emptied top level prints as "{}"; no contents at all leaves just the file's comments.
    if (isMap(this.document.contents) && this.document.contents.items.length === 0) this.document.contents = null;
    this.replaceText(this.serialized());
  }

  value(): unknown {
    const data: unknown = this.document.toJS();
    return data ?? {};
  }

  render(): string {
    return this.text;
  }

  /** `spacingFrom`: the lines whose spacing the output takes back (by default the text before the edit). */
  private serialized(spacingFrom = this.text): string {
    let output = this.document.toString(styleOf(this.text));
    // With no contents the serializer prints "null" after the comments; the file should keep only the comments.
    if (this.document.contents === null)
      output = output
        .replace(/null\n$/, '')
        .replace(/\n+$/, '\n')
        .replace(/^\n$/, '');
    const rendered = keepOriginalSpacing(spacingFrom, output);
    return lineEndingOf(this.text) === '\r\n' ? rendered.replace(/\r?\n/g, '\r\n') : rendered;
  }

  private replaceText(text: string): void {
    const document = parseDocument(text);
    if (document.errors.length > 0) {
      throw new ClawError('edit_failed', `MetaClaw could not edit ${this.source} without breaking it, so it left the file unchanged. Please report this.`, {
        path: this.source,
      });
    }
    this.text = text;
    this.document = document;
  }
}

/** `value` written in the style of the one-line scalar it replaces, or undefined when that scalar is not simple. */
function scalarSource(previous: Scalar, value: string, text: string): string | undefined {
  if (!previous.range || text.slice(previous.range[0], previous.range[1]).includes('\n')) return undefined;
  if (previous.type === Scalar.QUOTE_DOUBLE) return JSON.stringify(value);
  if (previous.type === Scalar.QUOTE_SINGLE) return `'${value.replace(/'/g, "''")}'`;
  if (previous.type !== Scalar.PLAIN) return undefined;
  const plain = parseDocument(`key: ${value}`).toJS() as unknown;
  const safe = !/[\n#]/.test(value) && isPlainObject(plain) && plain.key === value;
  return safe ? value : JSON.stringify(value);
}

function parseYaml(text: string, source: string): ConfigDocument {
  const document = parseDocument(text, { prettyErrors: true });
  const error = document.errors[0];
  if (error !== undefined) throw malformed('YAML', source, firstLine(error.message), error);
  const data: unknown = document.toJS();
  if (data !== null && data !== undefined && !isPlainObject(data)) throw malformed('YAML', source, 'the top level is not a mapping');
  return new YamlDocument(text, document, source);
}

function firstLine(message: string): string {
  return message.split('\n')[0]?.replace(/:$/, '') ?? message;
}

/**
 * The serializer normalizes spacing (e.g. the gap before a trailing comment); every output line that
 * differs from a line of the text before the edit only in such spacing is replaced by that line.
 */
function keepOriginalSpacing(original: string, rendered: string): string {
  const originals = new Map<string, string[]>();
  for (const line of original.split(/\r?\n/)) {
    const key = spacingKey(line);
    const lines = originals.get(key);
    if (lines === undefined) originals.set(key, [line]);
    else lines.push(line);
  }
  return rendered
    .split('\n')
    .map((line) => originals.get(spacingKey(line))?.shift() ?? line)
    .join('\n');
}

/** The line with whitespace outside quotes collapsed and flow brackets unpadded; indentation and quoted text kept. */
function spacingKey(line: string): string {
  const indentation = /^\s*/.exec(line)?.[0] ?? '';
  let key = indentation;
  let quote: string | undefined;
  for (const char of line.slice(indentation.length)) {
    if (quote === undefined && /\s/.test(char)) {
      if (!key.endsWith(' ') && key.length > indentation.length) key += ' ';
      continue;
    }
    if (char === quote) quote = undefined;
    else if (quote === undefined && (char === '"' || char === "'")) quote = char;
    key += char;
  }
  return key
    .trimEnd()
    .replace(/([[{]) /g, '$1')
    .replace(/ ([\]}])/g, '$1');
}

/** Serializer options that reproduce the file's indentation and sequence style and never fold lines. */
function styleOf(text: string): ToStringOptions {
  const lines = text.split(/\r?\n/);
  let indent: number | undefined;
  let indentSeq: boolean | undefined;
  for (let index = 0; index + 1 < lines.length && (indent === undefined || indentSeq === undefined); index += 1) {
    const parent = /^( *)[^\s#-][^#]*:\s*(#.*)?$/.exec(lines[index] ?? '');
    const next = /^( *)(- )?\S/.exec(lines[index + 1] ?? '');
    if (parent === null || next === null) continue;
    const depth = (next[1]?.length ?? 0) - (parent[1]?.length ?? 0);
    if (next[2] !== undefined) indentSeq ??= depth > 0;
    else if (depth > 0) indent ??= depth;
  }
  return { indent: indent ?? 2, indentSeq: indentSeq ?? true, lineWidth: 0, minContentWidth: 0, flowCollectionPadding: false };
}

export const yamlFormat: DocumentFormat = {
  name: 'YAML',
  parse: parseYaml,
  create: (source) => parseYaml('', source),
};
