/**
 * YAML files (Hermes), edited through the `yaml` package's Document API, which keeps comments,
 * blank lines and scalar quoting; indentation and sequence style are taken from the file itself.
 */
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { Document, ToStringOptions } from 'yaml';
import { findItemIndex, isItemSelector, isPlainObject, malformed } from './document.js';
import type { ConfigDocument, DocumentFormat, JsonValue, PathSegment } from './document.js';
import { lineEndingOf } from './text-edit.js';
import { TreeDocument } from './tree-document.js';
import type { NodeKind } from './tree-document.js';

class YamlDocument extends TreeDocument<unknown> {
  private readonly document: Document;
  private readonly original: string;

  constructor(document: Document, source: string, original: string) {
    super(source);
    this.document = document;
    this.original = original;
  }

  protected root(create: boolean): unknown {
    if (this.document.contents === null && create) this.document.contents = this.document.createNode({});
    return this.document.contents ?? undefined;
  }

  protected child(node: unknown, segment: PathSegment): unknown {
    let found: unknown;
    if (isItemSelector(segment)) {
      if (isSeq(node)) found = node.items[findItemIndex(node.toJSON() as unknown[], segment)];
    } else if (isMap(node)) {
      found = node.get(segment, true);
    }
    if (found === null || (isScalar(found) && found.value === null)) return undefined;
    return found;
  }

  protected kind(node: unknown): NodeKind {
    if (isMap(node)) return 'object';
    return isSeq(node) ? 'array' : 'scalar';
  }

  protected put(container: unknown, segment: PathSegment, value: JsonValue): void {
    if (isSeq(container) && isItemSelector(segment)) {
      const index = findItemIndex(container.toJSON() as unknown[], segment);
      if (index >= 0) container.set(index, this.document.createNode(value));
      else container.add(this.document.createNode(value));
    } else if (isMap(container) && !isItemSelector(segment)) {
      const previous = container.get(segment, true);
      // Assigning a plain scalar over a scalar keeps that scalar's quoting and trailing comment.
      if (isScalar(previous) && (value === null || typeof value !== 'object')) container.set(segment, value);
      else container.set(segment, this.document.createNode(value));
    }
  }

  protected remove(container: unknown, segment: PathSegment): void {
    if (isSeq(container) && isItemSelector(segment)) container.delete(findItemIndex(container.toJSON() as unknown[], segment));
    else if (isMap(container) && !isItemSelector(segment)) container.delete(segment);
  }

  value(): unknown {
    const data: unknown = this.document.toJS();
    return data ?? {};
  }

  render(): string {
    const rendered = keepOriginalSpacing(this.original, this.document.toString(styleOf(this.original)));
    return lineEndingOf(this.original) === '\r\n' ? rendered.replace(/\r?\n/g, '\r\n') : rendered;
  }
}

function parseYaml(text: string, source: string): ConfigDocument {
  const document = parseDocument(text, { prettyErrors: true });
  const error = document.errors[0];
  if (error !== undefined) throw malformed('YAML', source, firstLine(error.message), error);
  const data: unknown = document.toJS();
  if (data !== null && data !== undefined && !isPlainObject(data)) throw malformed('YAML', source, 'the top level is not a mapping');
  return new YamlDocument(document, source, text);
}

/**
 * The serializer normalizes spacing (e.g. the gap before a trailing comment); every output line that
 * differs from an original line only in such spacing is replaced by that original line.
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

function spacingKey(line: string): string {
  const indentation = /^\s*/.exec(line)?.[0] ?? '';
  const content = line.slice(indentation.length).replace(/\s+/g, ' ').replace(/([[{]) /g, '$1').replace(/ ([\]}])/g, '$1').trimEnd();
  return `${indentation}${content}`;
}

function firstLine(message: string): string {
  return message.split('\n')[0]?.replace(/:$/, '') ?? message;
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
