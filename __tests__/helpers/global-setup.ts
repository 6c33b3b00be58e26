// Runs once before the tests: says in one line when Redis, PostgreSQL or browser tests are skipped here (or, under CI,
// bound to fail).
import { browserNotice } from './browser-env';
import { postgresNotice } from './postgres-env';
import { redisNotice } from './redis-env';

export default function globalSetup(): void {
  for (const notice of [redisNotice(), postgresNotice(), browserNotice()]) if (notice) console.log(`\n${notice}\n`);
}
