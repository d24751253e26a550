import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { tables, type TableDefinition, type TableName } from '../../shared/tables';

/**
 * DynamoDB in memory, for the unit tier: the document client's commands the stores send (Get, Put, Update, Delete,
 * Query on tables and their indexes, Scan, BatchGet, TransactWrite), with condition, key, filter and update
 * expressions evaluated as DynamoDB does for the forms the stores write, and DynamoDB's own exceptions for a failed
 * condition or a cancelled transaction. Transactions apply all their writes or none. The integration tier runs the
 * same stores against DynamoDB Local; this is what lets a use case run in milliseconds with no Java.
 */
type Item = Record<string, unknown>;
type Names = Record<string, string> | undefined;
type Values = Record<string, unknown> | undefined;
type Path = (string | number)[];

interface Table {
  readonly definition: TableDefinition;
  readonly items: Map<string, Item>;
}

const clone = <T>(value: T): T => structuredClone(value);

// ---- expressions -------------------------------------------------------------------------------------------------

type Token = { kind: 'name' | 'value' | 'word' | 'number' | 'op'; text: string };

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /\s*(#[\w]+|:[\w]+|[A-Za-z_][\w]*|\d+|<>|<=|>=|[=<>(),.[\]+-])/y;
  let position = 0;
  while (position < expression.length) {
    pattern.lastIndex = position;
    const match = pattern.exec(expression);
    if (!match) {
      if (/^\s*$/.test(expression.slice(position))) break;
      throw new Error(`cannot read the expression at "${expression.slice(position)}"`);
    }
    const text = match[1]!;
    position = pattern.lastIndex;
    const kind = text.startsWith('#')
      ? 'name'
      : text.startsWith(':')
        ? 'value'
        : /^\d+$/.test(text)
          ? 'number'
          : /^[A-Za-z_]/.test(text)
            ? 'word'
            : 'op';
    tokens.push({ kind, text });
  }
  return tokens;
}

class Reader {
  private index = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly names: Names,
    private readonly values: Values,
  ) {}

  peek(offset = 0): Token | undefined {
    return this.tokens[this.index + offset];
  }

  next(): Token {
    const token = this.tokens[this.index++];
    if (!token) throw new Error('the expression ends too soon');
    return token;
  }

  isWord(word: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token?.kind === 'word' && token.text.toUpperCase() === word;
  }

  take(text: string): void {
    const token = this.next();
    if (token.text.toUpperCase() !== text) throw new Error(`expected ${text}, found ${token.text}`);
  }

  done(): boolean {
    return this.index >= this.tokens.length;
  }

  value(token: Token): unknown {
    if (!this.values || !(token.text in this.values)) throw new Error(`no value for ${token.text}`);
    return this.values[token.text];
  }

  /** An attribute path: names, `.name` and `[n]` parts. */
  path(): Path {
    const path: Path = [this.segment(this.next())];
    for (;;) {
      if (this.peek()?.text === '.') {
        this.next();
        path.push(this.segment(this.next()));
      } else if (this.peek()?.text === '[') {
        this.next();
        path.push(Number(this.next().text));
        this.take(']');
      } else return path;
    }
  }

  private segment(token: Token): string {
    if (token.kind === 'name') {
      const name = this.names?.[token.text];
      if (name === undefined) throw new Error(`no name for ${token.text}`);
      return name;
    }
    if (token.kind !== 'word') throw new Error(`expected an attribute, found ${token.text}`);
    return token.text;
  }
}

const MISSING = Symbol('missing');

function read(item: Item, path: Path): unknown {
  let current: unknown = item;
  for (const part of path) {
    if (current === null || typeof current !== 'object' || !(part in (current as object))) return MISSING;
    current = (current as Record<string | number, unknown>)[part];
  }
  return current;
}

function write(item: Item, path: Path, value: unknown): void {
  let current = item as Record<string | number, unknown>;
  for (const part of path.slice(0, -1)) {
    const next = current[part];
    if (next === null || typeof next !== 'object')
      throw validation('The document path provided in the update expression is invalid for update');
    current = next as Record<string | number, unknown>;
  }
  current[path.at(-1)!] = value;
}

function remove(item: Item, path: Path): void {
  const parent = read(item, path.slice(0, -1));
  if (parent === MISSING || parent === null || typeof parent !== 'object') return;
  const last = path.at(-1)!;
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else delete (parent as Record<string | number, unknown>)[last];
}

function validation(message: string): Error {
  return Object.assign(new Error(message), { name: 'ValidationException' });
}

/** DynamoDB compares numbers with numbers and strings with strings; anything else does not compare. */
function compare(left: unknown, op: string, right: unknown): boolean {
  if (op === '=') return left !== MISSING && right !== MISSING && JSON.stringify(left) === JSON.stringify(right);
  if (op === '<>') return !(left !== MISSING && right !== MISSING && JSON.stringify(left) === JSON.stringify(right));
  const comparable = (typeof left === 'number' && typeof right === 'number') || (typeof left === 'string' && typeof right === 'string');
  if (!comparable) return false;
  const [a, b] = [left as number | string, right as number | string];
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
    default:
      throw new Error(`unknown comparison ${op}`);
  }
}

function sizeOf(value: unknown): unknown {
  if (typeof value === 'string' || Array.isArray(value)) return value.length;
  if (value instanceof Set) return value.size;
  if (value !== null && typeof value === 'object') return Object.keys(value).length;
  return MISSING;
}

/** An operand of a condition: a path, a value, or size(path). */
function operand(reader: Reader, item: Item): unknown {
  const token = reader.peek();
  if (token?.kind === 'value') return reader.value(reader.next());
  if (reader.isWord('SIZE') && reader.peek(1)?.text === '(') {
    reader.next();
    reader.take('(');
    const value = sizeOf(read(item, reader.path()));
    reader.take(')');
    return value;
  }
  return read(item, reader.path());
}

function condition(reader: Reader, item: Item): boolean {
  let result = conjunction(reader, item);
  while (reader.isWord('OR')) {
    reader.next();
    result = conjunction(reader, item) || result;
  }
  return result;
}

function conjunction(reader: Reader, item: Item): boolean {
  let result = negation(reader, item);
  while (reader.isWord('AND')) {
    reader.next();
    result = negation(reader, item) && result;
  }
  return result;
}

function negation(reader: Reader, item: Item): boolean {
  if (reader.isWord('NOT')) {
    reader.next();
    return !negation(reader, item);
  }
  return predicate(reader, item);
}

function predicate(reader: Reader, item: Item): boolean {
  if (reader.peek()?.text === '(') {
    reader.next();
    const result = condition(reader, item);
    reader.take(')');
    return result;
  }
  for (const fn of ['ATTRIBUTE_EXISTS', 'ATTRIBUTE_NOT_EXISTS', 'BEGINS_WITH', 'CONTAINS']) {
    if (!reader.isWord(fn)) continue;
    reader.next();
    reader.take('(');
    const value = read(item, reader.path());
    let argument: unknown;
    if (reader.peek()?.text === ',') {
      reader.next();
      argument = operand(reader, item);
    }
    reader.take(')');
    if (fn === 'ATTRIBUTE_EXISTS') return value !== MISSING;
    if (fn === 'ATTRIBUTE_NOT_EXISTS') return value === MISSING;
    if (fn === 'BEGINS_WITH') return typeof value === 'string' && typeof argument === 'string' && value.startsWith(argument);
    return (
      (typeof value === 'string' && typeof argument === 'string' && value.includes(argument)) ||
      (Array.isArray(value) && value.includes(argument))
    );
  }
  const left = operand(reader, item);
  if (reader.isWord('IN')) {
    reader.next();
    reader.take('(');
    const candidates = [operand(reader, item)];
    while (reader.peek()?.text === ',') {
      reader.next();
      candidates.push(operand(reader, item));
    }
    reader.take(')');
    return candidates.some((candidate) => compare(left, '=', candidate));
  }
  if (reader.isWord('BETWEEN')) {
    reader.next();
    const low = operand(reader, item);
    reader.take('AND');
    const high = operand(reader, item);
    return compare(left, '>=', low) && compare(left, '<=', high);
  }
  const op = reader.next().text;
  return compare(left, op, operand(reader, item));
}

function holds(expression: string | undefined, item: Item, names: Names, values: Values): boolean {
  if (!expression) return true;
  const reader = new Reader(tokenize(expression), names, values);
  const result = condition(reader, item);
  if (!reader.done()) throw new Error(`unexpected ${reader.peek()?.text} in ${expression}`);
  return result;
}

/** A value of SET: an operand, if_not_exists(path, value), list_append(a, b), and `a + b` or `a - b`. */
function setValue(reader: Reader, item: Item): unknown {
  const first = setTerm(reader, item);
  const op = reader.peek()?.text;
  if (op !== '+' && op !== '-') return first;
  reader.next();
  const second = setTerm(reader, item);
  if (typeof first !== 'number' || typeof second !== 'number')
    throw validation('An operand in the update expression has an incorrect data type');
  return op === '+' ? first + second : first - second;
}

function setTerm(reader: Reader, item: Item): unknown {
  if (reader.isWord('IF_NOT_EXISTS') && reader.peek(1)?.text === '(') {
    reader.next();
    reader.take('(');
    const current = read(item, reader.path());
    reader.take(',');
    const fallback = setValue(reader, item);
    reader.take(')');
    return current === MISSING ? fallback : current;
  }
  if (reader.isWord('LIST_APPEND') && reader.peek(1)?.text === '(') {
    reader.next();
    reader.take('(');
    const a = setValue(reader, item);
    reader.take(',');
    const b = setValue(reader, item);
    reader.take(')');
    if (!Array.isArray(a) || !Array.isArray(b)) throw validation('list_append takes two lists');
    return [...a, ...b];
  }
  const token = reader.peek();
  if (token?.kind === 'value') return reader.value(reader.next());
  const value = read(item, reader.path());
  if (value === MISSING) throw validation('The provided expression refers to an attribute that does not exist in the item');
  return value;
}

/** Applies an update expression to a copy of the item (every value read from the item as it was). */
function updated(expression: string, item: Item, names: Names, values: Values): Item {
  const before = clone(item);
  const after = clone(item);
  const reader = new Reader(tokenize(expression), names, values);
  while (!reader.done()) {
    const clause = reader.next().text.toUpperCase();
    do {
      if (clause !== 'SET' && clause !== 'REMOVE' && clause !== 'ADD' && clause !== 'DELETE') throw new Error(`unknown clause ${clause}`);
      const path = reader.path();
      if (clause === 'SET') {
        reader.take('=');
        write(after, path, setValue(reader, before));
      } else if (clause === 'REMOVE') remove(after, path);
      else {
        const given = reader.value(reader.next());
        const current = read(before, path);
        if (clause === 'ADD' && typeof given === 'number') {
          write(after, path, (current === MISSING ? 0 : (current as number)) + given);
        } else if (given instanceof Set) {
          const set = new Set(current instanceof Set ? current : []);
          for (const member of given) {
            if (clause === 'ADD') set.add(member);
            else set.delete(member);
          }
          write(after, path, set);
        } else throw validation(`${clause} takes a number or a set`);
      }
    } while (reader.peek()?.text === ',' && reader.next());
  }
  return after;
}

// ---- the client --------------------------------------------------------------------------------------------------

type Key = Record<string, unknown>;

export class MemoryDynamo {
  private readonly tables = new Map<string, Table>();

  constructor(physicalNames: Readonly<Record<TableName, string>>) {
    for (const [table, name] of Object.entries(physicalNames) as [TableName, string][]) {
      this.tables.set(name, { definition: tables[table] as TableDefinition, items: new Map() });
    }
  }

  /** The client the stores are given. */
  asClient(): DynamoDBDocumentClient {
    return { send: (command: unknown) => this.send(command) } as unknown as DynamoDBDocumentClient;
  }

  private table(name: string | undefined): Table {
    const table = name === undefined ? undefined : this.tables.get(name);
    if (!table) throw Object.assign(new Error(`Requested resource not found: ${name}`), { name: 'ResourceNotFoundException' });
    return table;
  }

  private keyOf(table: Table, item: Key): string {
    const { partitionKey, sortKey } = table.definition;
    const parts = [item[partitionKey.name], ...(sortKey ? [item[sortKey.name]] : [])];
    if (parts.some((part) => part === undefined)) throw validation('The provided key element does not match the schema');
    return JSON.stringify(parts);
  }

  private async send(command: unknown): Promise<unknown> {
    // Another turn of the event loop, as a call over the network takes: races interleave as they would.
    await new Promise((resolve) => setImmediate(resolve));
    if (command instanceof GetCommand) {
      const { TableName, Key } = command.input;
      const item = this.table(TableName).items.get(this.keyOf(this.table(TableName), Key!));
      return { Item: item && clone(item) };
    }
    if (command instanceof PutCommand) return this.replace(command.input, command.input.Item!, command.input.Item);
    if (command instanceof UpdateCommand) return this.update(command.input);
    if (command instanceof DeleteCommand) return this.replace(command.input, command.input.Key!, undefined);
    if (command instanceof QueryCommand) return this.query(command.input);
    if (command instanceof ScanCommand) {
      const { TableName, FilterExpression, ExpressionAttributeNames, ExpressionAttributeValues } = command.input;
      const items = [...this.table(TableName).items.values()].filter((item) =>
        holds(FilterExpression, item, ExpressionAttributeNames, ExpressionAttributeValues),
      );
      return { Items: items.map(clone), Count: items.length };
    }
    if (command instanceof BatchGetCommand) {
      const responses: Record<string, Item[]> = {};
      for (const [name, request] of Object.entries(command.input.RequestItems ?? {})) {
        const table = this.table(name);
        responses[name] = (request.Keys ?? []).flatMap((key) => {
          const item = table.items.get(this.keyOf(table, key));
          return item ? [clone(item)] : [];
        });
      }
      return { Responses: responses, UnprocessedKeys: {} };
    }
    if (command instanceof TransactWriteCommand) return this.transact(command.input.TransactItems ?? []);
    throw new Error(`the in-memory DynamoDB does not take ${(command as object).constructor.name}`);
  }

  /** A Put (`next` the new item) or a Delete (no `next`) of the item at `key`, when its condition holds. */
  private replace(input: PutCommand['input'] | DeleteCommand['input'], key: Key, next: Item | undefined): unknown {
    const table = this.table(input.TableName);
    const at = this.keyOf(table, key);
    const old = table.items.get(at);
    this.check(
      input.ConditionExpression,
      old,
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
      input.ReturnValuesOnConditionCheckFailure,
    );
    if (next) table.items.set(at, clone(next));
    else table.items.delete(at);
    return { Attributes: input.ReturnValues === 'ALL_OLD' && old ? clone(old) : undefined };
  }

  /** Throws DynamoDB's exception when the condition does not hold for the item as it is. */
  private check(expression: string | undefined, old: Item | undefined, names: Names, values: Values, returnOld?: string): void {
    if (holds(expression, old ?? {}, names, values)) return;
    throw new ConditionalCheckFailedException({
      message: 'The conditional request failed',
      $metadata: {},
      ...(returnOld === 'ALL_OLD' && old ? { Item: marshall(old, { removeUndefinedValues: true }) } : {}),
    });
  }

  private update(input: UpdateCommand['input']): unknown {
    const { TableName, Key, UpdateExpression, ConditionExpression, ExpressionAttributeNames, ExpressionAttributeValues, ReturnValues } =
      input;
    const table = this.table(TableName);
    const key = this.keyOf(table, Key!);
    const old = table.items.get(key);
    this.check(ConditionExpression, old, ExpressionAttributeNames, ExpressionAttributeValues, input.ReturnValuesOnConditionCheckFailure);
    const next = updated(UpdateExpression ?? '', { ...clone(old ?? {}), ...Key }, ExpressionAttributeNames, ExpressionAttributeValues);
    table.items.set(key, next);
    if (ReturnValues === 'ALL_NEW') return { Attributes: clone(next) };
    if (ReturnValues === 'ALL_OLD') return { Attributes: old && clone(old) };
    if (ReturnValues === 'UPDATED_NEW') {
      const changed = Object.fromEntries(
        Object.entries(next).filter(([name, value]) => JSON.stringify(old?.[name]) !== JSON.stringify(value)),
      );
      return { Attributes: clone(changed) };
    }
    return {};
  }

  private query(input: QueryCommand['input']): unknown {
    const { TableName, IndexName, KeyConditionExpression, FilterExpression, ExpressionAttributeNames, ExpressionAttributeValues, Limit } =
      input;
    const table = this.table(TableName);
    const index = IndexName ? table.definition.globalSecondaryIndexes?.find((i) => i.indexName === IndexName) : undefined;
    if (IndexName && !index) throw validation(`The table does not have the specified index: ${IndexName}`);
    const partitionKey = index?.partitionKey ?? table.definition.partitionKey;
    const sortKey = index ? index.sortKey : table.definition.sortKey;
    const project = (item: Item): Item => {
      if (!index) return clone(item);
      const kept = [table.definition.partitionKey.name, table.definition.sortKey?.name, partitionKey.name, sortKey?.name];
      if (index.projection.type === 'INCLUDE') kept.push(...index.projection.attributes);
      return clone(Object.fromEntries(Object.entries(item).filter(([name]) => kept.includes(name))));
    };
    let items = [...table.items.values()]
      .filter((item) => item[partitionKey.name] !== undefined && (!sortKey || item[sortKey.name] !== undefined))
      .filter((item) => holds(KeyConditionExpression, item, ExpressionAttributeNames, ExpressionAttributeValues))
      .map(project);
    if (sortKey) {
      const order = (a: Item, b: Item) => {
        const [x, y] = [a[sortKey.name] as string | number, b[sortKey.name] as string | number];
        return x < y ? -1 : x > y ? 1 : 0;
      };
      items.sort(input.ScanIndexForward === false ? (a, b) => order(b, a) : order);
    }
    if (input.ExclusiveStartKey) {
      const start = JSON.stringify(input.ExclusiveStartKey);
      const after = items.findIndex((item) => JSON.stringify(this.pageKey(table, item, partitionKey.name, sortKey?.name)) === start);
      items = items.slice(after + 1);
    }
    let lastEvaluatedKey: Key | undefined;
    if (Limit !== undefined && items.length > Limit) {
      items = items.slice(0, Limit);
      lastEvaluatedKey = this.pageKey(table, items.at(-1)!, partitionKey.name, sortKey?.name);
    }
    const matching = items.filter((item) => holds(FilterExpression, item, ExpressionAttributeNames, ExpressionAttributeValues));
    return { Items: matching, Count: matching.length, LastEvaluatedKey: lastEvaluatedKey };
  }

  /** A page's last key, as DynamoDB gives it: the table's key and the index's. */
  private pageKey(table: Table, item: Item, ...names: (string | undefined)[]): Key {
    const keys = [table.definition.partitionKey.name, table.definition.sortKey?.name, ...names].filter((name): name is string => !!name);
    return Object.fromEntries([...new Set(keys)].sort().map((name) => [name, item[name]]));
  }

  private transact(operations: NonNullable<TransactWriteCommand['input']['TransactItems']>): unknown {
    const writes = operations.map((operation) => {
      const [kind, input] = Object.entries(operation).find(([, value]) => value !== undefined)! as [string, Record<string, any>];
      const table = this.table(input.TableName);
      const key = this.keyOf(table, kind === 'Put' ? input.Item : input.Key);
      return { kind, input, table, key, old: table.items.get(key) };
    });
    const keys = writes.map(({ table, key }) => `${[...this.tables.entries()].find(([, t]) => t === table)![0]}#${key}`);
    if (new Set(keys).size !== keys.length) throw validation('Transaction request cannot include multiple operations on one item');
    const reasons = writes.map(({ input, old }) =>
      holds(input.ConditionExpression, old ?? {}, input.ExpressionAttributeNames, input.ExpressionAttributeValues)
        ? { Code: 'None' }
        : { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed' },
    );
    if (reasons.some((reason) => reason.Code !== 'None')) {
      throw new TransactionCanceledException({
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
        $metadata: {},
        CancellationReasons: reasons,
      });
    }
    for (const { kind, input, table, key, old } of writes) {
      if (kind === 'Put') table.items.set(key, clone(input.Item));
      else if (kind === 'Delete') table.items.delete(key);
      else if (kind === 'Update') {
        table.items.set(
          key,
          updated(
            input.UpdateExpression,
            { ...clone(old ?? {}), ...input.Key },
            input.ExpressionAttributeNames,
            input.ExpressionAttributeValues,
          ),
        );
      }
    }
    return {};
  }
}
