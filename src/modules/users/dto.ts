import type { Role } from '../auth/caller.js';
import * as v from '../../lib/validation.js';

export interface UserRow {
  id: string;
  organization_id: string;
  first_name: string;
  last_name: string;
  email: string;
  country_code: string;
  phone_number: string;
  role: Role;
  is_active: boolean;
  password_hash: string;
  tokens_valid_after: number;
  created_at: Date;
  updated_at: Date;
}

/** A user as the API shows it; the password hash never leaves the service. */
export interface UserDto {
  _id: string;
  firstName: string;
  lastName: string;
  email: string;
  countryCode: string;
  phoneNumber: string;
  role: Role;
  organization: string;
  isActive: boolean;
  createdAt: string;
  updatedAt: string;
}

export const USER_COLUMNS = [
  'id',
  'organization_id',
  'first_name',
  'last_name',
  'email',
  'country_code',
  'phone_number',
  'role',
  'is_active',
  'created_at',
  'updated_at',
] as const;

export function toUserDto(row: Omit<UserRow, 'password_hash' | 'tokens_valid_after'>): UserDto {
  return {
    _id: row.id,
    firstName: row.first_name,
    lastName: row.last_name,
    email: row.email,
    countryCode: row.country_code,
    phoneNumber: row.phone_number,
    role: row.role,
    organization: row.organization_id,
    isActive: row.is_active,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The fields the interface lists for login and for `GET /users`. */
export const loginUser = ({ _id, firstName, lastName, email, role, organization, isActive }: UserDto) => ({
  _id,
  firstName,
  lastName,
  email,
  role,
  organization,
  isActive,
});
export const listedUser = (u: UserDto) => ({ ...loginUser(u), createdAt: u.createdAt, updatedAt: u.updatedAt });

/** What a new user gives, at signup and when an admin adds one: the rules of decisions.md. */
export const newUserFields = () => ({
  firstName: v.name(),
  lastName: v.name(),
  email: v.email(),
  password: v.password(),
  countryCode: v.countryCode(),
  phoneNumber: v.localPhone(),
});
