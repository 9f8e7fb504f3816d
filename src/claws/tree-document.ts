/**
 * Path navigation shared by the nested formats (JSON/JSON5, YAML, and plain values used as a model):
 * each subclass only says how to find, put and remove one child of one node.
 */
import { conflict, isItemSelector, isPlainObject, nestValue, readPath, findItemIndex, selectedItem, cloneJson } from './document.js';
import type { ConfigDocument, JsonValue, KeyPath, PathSegment } from './document.js';

/** `alias`: a YAML `*name` reference, whose target other keys share, so MetaClaw never edits through it */
export type NodeKind = 'object' | 'array' | 'scalar' | 'alias';

export abstract class TreeDocument<Node> implements ConfigDocument {
  /** the file the document came from, for messages */
  protected readonly source: string;

  protected constructor(source: string) {
    this.source = source;
  }

  /** The top-level node; with `create`, an empty object is made when the document has none. */
  protected abstract root(create: boolean): Node | undefined;
  /** The child under `segment`, or undefined when absent (or null). */
  protected abstract child(node: Node, segment: PathSegment): Node | undefined;
  protected abstract kind(node: Node): NodeKind;
  /** Sets a key of an object, or replaces (else appends) the selected item of an array. */
  protected abstract put(container: Node, segment: PathSegment, value: JsonValue): void;
  protected abstract remove(container: Node, segment: PathSegment): void;
  abstract value(): unknown;
  abstract render(): string;

  set(path: KeyPath, value: JsonValue): void {
    let node = this.root(true);
    for (let index = 0; index < path.length && node !== undefined; index += 1) {
      const segment = path[index] as PathSegment;
      this.expectContainer(node, segment, path.slice(0, index));
      const rest = path.slice(index + 1);
      const child = rest.length === 0 ? undefined : this.child(node, segment);
      if (child === undefined) {
        const nested = nestValue(rest, value);
        this.put(node, segment, isItemSelector(segment) ? selectedItem(segment, nested) : nested);
        return;
      }
      node = child;
    }
  }

  delete(path: KeyPath): void {
    const last = path[path.length - 1];
    if (last === undefined) return;
    let node = this.root(false);
    for (const segment of path.slice(0, -1)) {
      if (node === undefined || this.kind(node) === 'scalar' || this.kind(node) === 'alias') return;
      node = this.child(node, segment);
    }
    if (node === undefined || this.child(node, last) === undefined) return;
    this.remove(node, last);
  }

  restore(path: KeyPath, original: ConfigDocument): void {
    const value = readPath(original.value(), path);
    if (value === undefined) this.delete(path);
    else this.set(path, cloneJson(value) as JsonValue);
  }

  private expectContainer(node: Node, segment: PathSegment, at: KeyPath): void {
    const kind = this.kind(node);
    const wanted: NodeKind = isItemSelector(segment) ? 'array' : 'object';
    if (kind !== wanted) throw conflict(this.source, at, `is ${article(kind)}, where MetaClaw expects ${article(wanted)}`);
  }
}

function article(kind: NodeKind): string {
  if (kind === 'alias') return 'an alias (*name) of another part of the file';
  return kind === 'object' ? 'an object' : kind === 'array' ? 'a list' : 'a single value';
}

/** Plain values as a document: the model an edited file must match, and the fallback for tests. */
export class PlainDocument extends TreeDocument<unknown> {
  private data: Record<string, unknown>;

  constructor(data: unknown, source = 'value') {
    super(source);
    this.data = isPlainObject(data) ? cloneJson<Record<string, unknown>>(data) : {};
  }

  protected root(): unknown {
    return this.data;
  }

  protected child(node: unknown, segment: PathSegment): unknown {
    const found = readPath(node, [segment]);
    return found === null ? undefined : found;
  }

  protected kind(node: unknown): NodeKind {
    if (Array.isArray(node)) return 'array';
    return isPlainObject(node) ? 'object' : 'scalar';
  }

  protected put(container: unknown, segment: PathSegment, value: JsonValue): void {
    if (isItemSelector(segment)) {
      const items = container as unknown[];
      const index = findItemIndex(items, segment);
      if (index >= 0) items[index] = value;
      else if (segment.first === true) items.unshift(value);
      else items.push(value);
    } else {
      (container as Record<string, unknown>)[segment] = value;
    }
  }

  protected remove(container: unknown, segment: PathSegment): void {
    if (isItemSelector(segment)) {
      const items = container as unknown[];
      items.splice(findItemIndex(items, segment), 1);
    } else {
      delete (container as Record<string, unknown>)[segment];
    }
  }

  value(): unknown {
    return this.data;
  }

  render(): string {
    return JSON.stringify(this.data);
  }
}
