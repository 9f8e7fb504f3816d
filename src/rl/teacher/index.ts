export { teacherLogprobs, type TeacherAnswer, type TeacherEndpoint } from './client.js';
export { askTeacher, TeacherHandler, TEACHER_JOB, teacherPayloadSchema, type TeacherOutcome } from './handler.js';
