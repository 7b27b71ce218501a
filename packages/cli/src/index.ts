export { main } from './main.js';
export { runGraphDemo, type GraphDemoResult } from './demo-graph.js';
