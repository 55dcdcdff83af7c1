/**
 * The GraphQL documents both contact pages use: one fragment for what a contact shows everywhere
 * (so the list, the contact page and every mutation's answer keep the cache whole), the contact
 * mutations, and the groups offered by the group pickers.
 */
import { graphql } from '../../gql';

export const ContactFields = graphql(`
  fragment ContactFields on Contact {
    _id
    name
    email
    phone
    countryCode
    organization
    timezone
    tags
    attributes
    groupIds
    groups {
      _id
      name
      color
    }
    subscriptions {
      email {
        status
        unsubscribedAt
        source
      }
      sms {
        status
        unsubscribedAt
        source
      }
      whatsapp {
        status
        unsubscribedAt
        source
      }
    }
    createdAt
    updatedAt
  }
`);

export const CreateContact = graphql(`
  mutation CreateContact($input: CreateContactInput!) {
    createContact(input: $input) {
      ...ContactFields
    }
  }
`);

export const UpdateContact = graphql(`
  mutation UpdateContact($id: ID!, $input: UpdateContactInput!) {
    updateContact(id: $id, input: $input) {
      ...ContactFields
    }
  }
`);

export const DeleteContact = graphql(`
  mutation DeleteContact($id: ID!) {
    deleteContact(id: $id) {
      message
    }
  }
`);

/** The groups a picker offers: the first 1,000 (the API's largest page). */
export const GroupOptions = graphql(`
  query ContactGroupOptions {
    groups(first: 1000) {
      edges {
        node {
          _id
          name
          color
        }
      }
    }
  }
`);
