// Runs once before the tests: says in one line when Redis tests are skipped here (or, under CI, bound to fail).
import { redisNotice } from './redis-env';

export default function globalSetup(): void {
  const notice = redisNotice();
  if (notice) console.log(`\n${notice}\n`);
}
