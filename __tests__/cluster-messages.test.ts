// The cluster store's messages, in one process: what a worker or the primary sends that is malformed is answered with
// its error or skipped, told once, and never stops the counting.
import { Channel } from '../lib/stores/cluster/channel';
import { hubOf, Peer } from '../lib/stores/cluster/primary';
import { TAG } from '../lib/stores/cluster/messages';

const NAME = JSON.stringify(['GET /x', 'fixed', [[2, 60_000]]]);

/** What the primary answers a worker that sent `calls`, once the turn's message has left. */
function answered(calls: unknown): Promise<unknown[]> {
  return new Promise((resolve) => {
    const peer = new Peer((message) => resolve(message.out));
    hubOf().handle(peer, { [TAG]: 1, calls }, 'a test');
    setTimeout(() => resolve([]), 50);
  });
}

describe('the primary, given calls no worker of this package sends', () => {
  let warning: jest.SpyInstance;
  beforeAll(() => (warning = jest.spyOn(process, 'emitWarning').mockImplementation(() => {})));
  afterAll(() => warning.mockRestore());

  it.each([
    ['no call', [null, 5, 'x', [], ['1', 'p', 'hit']]],
    ['a counter that is no JSON', [[1, 'p', 'hit', '{', 'k']]],
    ['a counter without limits', [[1, 'p', 'hit', JSON.stringify(['GET /x', 'fixed', []]), 'k']]],
    ['a limit of 0', [[1, 'p', 'hit', JSON.stringify(['GET /x', 'fixed', [[0, 1000]]]), 'k']]],
    ['a window over a year', [[1, 'p', 'hit', JSON.stringify(['GET /x', 'fixed', [[1, 1e15]]]), 'k']]],
    ['a key that is no text', [[1, 'p', 'hit', NAME, { toString: 1 }]]],
    ['an unknown operation', [[1, 'p', 'drop']]],
    [
      'a record that is no JSON object',
      [[1, 'p', 'change', [{ field: 'ban:x', value: 'no', when: 'always', now: 1 }], null, null]],
    ],
    ['records that are no list', [[1, 'p', 'change', 'all', null, null]]],
    ['a grant request without its place', [[1, 'p', 'file', 'id', '{}', {}, {}, 1, null]]],
    ['a change after its time', [[1, 'p', 'removeHistory', 'entry', 1]]],
  ])('answers %s with an error, or skips it, and counts on', async (_what, calls) => {
    const answers = await answered(calls);
    for (const answer of answers) expect(answer).toEqual([1, 0, expect.any(String)]);
    expect(await answered([[2, 'p', 'hit', NAME, 'k']])).toEqual([[2, 1, [expect.any(Number), expect.any(Number)]]]);
    expect(await answered([[3, 'p', 'reset', NAME, 'k']])).toEqual([[3, 1, true]]);
  });

  it('told of the first malformed call only, once for the process, as a warning with its code', () => {
    expect(warning.mock.calls).toEqual([
      [
        'listing-limits: a message of the cluster store from a test was skipped (a call without its id and prefix); ' +
          'later ones are skipped silently.',
        { code: 'LISTING_LIMITS_CLUSTER_MESSAGE' },
      ],
    ]);
  });
});

describe("a worker's channel, given answers no primary of this package sends", () => {
  let warning: jest.SpyInstance;
  beforeAll(() => (warning = jest.spyOn(process, 'emitWarning').mockImplementation(() => {})));
  afterAll(() => warning.mockRestore());

  it('skips them and still takes the answer its call waits for', async () => {
    const sent: unknown[] = [];
    const channel = new Channel((message) => sent.push(message));
    const call = channel.call('p', 'hit', [NAME, 'k'], 10_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([{ [TAG]: 1, calls: [[1, 'p', 'hit', NAME, 'k']] }]);
    for (const message of [
      { [TAG]: 1 },
      { [TAG]: 1, out: 'x' },
      {
        [TAG]: 1,
        out: [null, [99, 1, 'none waits'], [1, 7], ['p', 'whole', 'e', 'x', []], ['p', 'changes', 'e', 1, [[1]]]],
      },
      { app: 'its own', [TAG]: 2, out: [[1, 1, 'not this package']] },
    ])
      channel.receive(message);
    channel.receive({ [TAG]: 1, out: [[1, 1, [1, 5]]] });
    await expect(call).resolves.toEqual([1, 5]);
  });

  it('rejects a call the primary does not answer within its time, as the sweep finds it', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const channel = new Channel(() => {});
      const call = channel.call('p', 'sync', [], 300);
      jest.advanceTimersByTime(1000);
      await expect(call).rejects.toThrow("listing-limits: the cluster's primary did not answer in time");
    } finally {
      jest.useRealTimers();
    }
  });
});
