// The verifier's entry point, `listing-limits/verify`: probes a running API and checks that it enforces a limits table.
export { planVerification, verifyContract } from './verify/run.js';
export type {
  EndpointPlan,
  EndpointReport,
  VerifyEvent,
  VerifyOptions,
  VerifyPlan,
  VerifyReport,
  VerifyWaitReason,
  /** @deprecated Use `VerifyWaitReason`, which says whose waits these are (the client has a `WaitReason`). */
  VerifyWaitReason as WaitReason,
  WindowSeen,
} from './verify/types.js';
