// Express 4 is installed under the alias `express4` so that the suite runs against both majors; its API types match.
declare module 'express4' {
  import express from 'express';
  export default express;
}
